{{/* The chart name, or nameOverride. */}}
{{- define "routectl.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The full name of the release's objects: fullnameOverride, or "<release>-<name>" unless the
release name already contains the name. */}}
{{- define "routectl.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/* Labels on every object. */}}
{{- define "routectl.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "routectl.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: routectl
{{- end }}

{{/* Labels that select the pods. */}}
{{- define "routectl.selectorLabels" -}}
app.kubernetes.io/name: {{ include "routectl.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/* "<fullname>-<suffix>", the full name cut so the whole stays within 63 characters. */}}
{{- define "routectl.suffixed" -}}
{{- $suffix := index . 1 }}
{{- printf "%s-%s" (include "routectl.fullname" (index . 0) | trunc (int (sub 62 (len $suffix))) | trimSuffix "-") $suffix }}
{{- end }}

{{/* The ServiceAccount's name (required when the chart does not create it: validate). */}}
{{- define "routectl.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "routectl.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* Seconds in a Go duration ("1m30s" -> 90, "500ms" -> 0.5, "0" -> 0). */}}
{{- define "routectl.seconds" -}}
{{- $total := 0.0 -}}
{{- range (regexFindAll "[0-9]*\\.?[0-9]+(ns|us|µs|ms|s|m|h)" (toString .) -1) -}}
{{- $unit := regexFind "(ns|us|µs|ms|s|m|h)$" . -}}
{{- $multiplier := get (dict "ns" 1e-9 "us" 1e-6 "µs" 1e-6 "ms" 0.001 "s" 1.0 "m" 60.0 "h" 3600.0) $unit -}}
{{- $total = addf $total (mulf (float64 (trimSuffix $unit .)) $multiplier) -}}
{{- end -}}
{{- $total -}}
{{- end -}}

{{/* host:port for --metrics-bind-address (IPv6 hosts in brackets). */}}
{{- define "routectl.metricsHostPort" -}}
{{- $host := .Values.metrics.bindAddress }}
{{- if contains ":" $host }}{{ $host = printf "[%s]" $host }}{{ end }}
{{- printf "%s:%d" $host (int .Values.metrics.port) }}
{{- end }}

{{/* The container's resources: the values', or sized from expectedNodes (80 MiB for the
process and about 7 KiB per Node measured; request 96 MiB + 7 KiB per Node, limit twice that,
at least 256 MiB). */}}
{{- define "routectl.resources" -}}
{{- if .Values.resources }}
{{- toYaml .Values.resources }}
{{- else }}
{{- $request := add 96 (div (add (mul (int .Values.expectedNodes) 7) 1023) 1024) }}
requests:
  cpu: 50m
  memory: {{ $request }}Mi
limits:
  memory: {{ max 256 (mul 2 $request) }}Mi
{{- end }}
{{- end }}

{{/* routectl's defaults of the values the chart checks against each other (the leader
election timings), used only when those values are unset; a test keeps them equal to
routectl's settings table. */}}
{{- define "routectl.binaryDefaults" -}}
leaseDuration: 15s
renewDeadline: 10s
retryPeriod: 2s
{{- end }}

{{/* The pod's DNS policy: the value's, or the one right for the networking mode. */}}
{{- define "routectl.dnsPolicy" -}}
{{- if .Values.dnsPolicy }}{{ .Values.dnsPolicy }}
{{- else if .Values.hostNetwork }}ClusterFirstWithHostNet
{{- else }}ClusterFirst
{{- end }}
{{- end }}

{{/* The ServiceMonitor's server name: the value's, or the metrics Service's DNS name. */}}
{{- define "routectl.metricsServerName" -}}
{{- default (printf "%s.%s.svc" (include "routectl.suffixed" (list . "metrics")) .Release.Namespace) .Values.metrics.tls.serverName }}
{{- end }}

{{/* The Secret with the scraper's token, and its key. */}}
{{- define "routectl.scraperSecret" -}}
{{- default (include "routectl.suffixed" (list . "metrics-scraper")) .Values.metrics.serviceMonitor.authorization.existingSecret }}
{{- end }}

{{/* The leader-election Lease's name. */}}
{{- define "routectl.leaseName" -}}
{{- default (include "routectl.fullname" .) .Values.leaderElection.resourceName }}
{{- end }}

{{/* The container image reference. */}}
{{- define "routectl.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}

{{/* Fails rendering with a clear message when the values cannot make a working install. The
schema (values.schema.json) checks types and ranges; this checks what it cannot say clearly. */}}
{{- define "routectl.validate" -}}
{{- $cidrs := .Values.clusterCIDRs | default list }}
{{- if not $cidrs }}
{{- fail "clusterCIDRs is required: set it to the cluster's pod CIDR(s), the value of kube-controller-manager's --cluster-cidr, e.g. --set 'clusterCIDRs={10.244.0.0/16}' (dual-stack: one IPv4 and one IPv6 CIDR)" }}
{{- end }}
{{- if eq (len $cidrs) 2 }}
{{- if eq (contains ":" (index $cidrs 0)) (contains ":" (index $cidrs 1)) }}
{{- fail (printf "clusterCIDRs %v: two CIDRs must be dual-stack, one IPv4 and one IPv6" $cidrs) }}
{{- end }}
{{- end }}
{{- if not .Values.provider.name }}
{{- fail "provider.name is required: the provider plugin to use, e.g. --set provider.name=aws (or hcloud, openstack: a plugin your image contains)" }}
{{- end }}
{{- if and (eq .Values.provider.name "fake") (ne (toString (index (.Values.provider.options | default dict) "demo")) "true") }}
{{- fail "provider.name fake is an in-memory cloud for tests and demos: the routes it reports go nowhere. Name your cloud's plugin, or set provider.options.demo=\"true\" for a demo" }}
{{- end }}
{{- if not .Values.image.repository }}
{{- fail "image.repository is required: routectl publishes no image. Build one with your plugins and push it where the cluster pulls from (docker buildx build --build-arg PROVIDERS=aws -t registry.example.com/routectl:0.1.0 --push .), then --set image.repository=registry.example.com/routectl (docs/deploy.md)" }}
{{- end }}
{{- if and (gt (int .Values.replicaCount) 1) (eq (include "routectl.leading" .) "false") }}
{{- fail (printf "replicaCount is %d but leaderElection.enabled is false: more than one replica needs leader election, or they would all write routes" (int .Values.replicaCount)) }}
{{- end }}
{{- if and (not .Values.serviceAccount.create) (not .Values.serviceAccount.name) }}
{{- fail "serviceAccount.name is required when serviceAccount.create is false: name the existing ServiceAccount routectl runs as (the chart never binds its roles to the namespace's default account)" }}
{{- end }}
{{- $creds := .Values.provider.credentials }}
{{- if not $creds.existingSecret }}
{{- range $what, $mapping := dict "provider.credentials.env" $creds.env "provider.credentials.file.options" $creds.file.options "provider.credentials.file.env" $creds.file.env }}
{{- if $mapping }}
{{- fail (printf "%s maps %s but provider.credentials.existingSecret is empty: name the Secret to read them from (without it the mappings would be dropped and the pod would start without credentials)" $what (keys $mapping | sortAlpha | join ", ")) }}
{{- end }}
{{- end }}
{{- end }}
{{- if $creds.existingSecret }}
{{- if and (eq $creds.mode "env") (not $creds.env) }}
{{- fail "provider.credentials.mode is env but provider.credentials.env is empty: map environment variable names to keys of the Secret, e.g. {HCLOUD_TOKEN: token}" }}
{{- end }}
{{- if and (eq $creds.mode "file") (not $creds.file.options) (not $creds.file.env) }}
{{- fail "provider.credentials.mode is file but neither provider.credentials.file.options nor provider.credentials.file.env says where routectl finds the file, e.g. file.options: {token-file: token}" }}
{{- end }}
{{- end }}
{{- if and .Values.metrics.tls.existingSecret (not .Values.metrics.secure) }}
{{- fail (printf "metrics.tls.existingSecret is %s but metrics.secure is false: plain HTTP serves no certificate; set metrics.secure=true or leave the Secret out" .Values.metrics.tls.existingSecret) }}
{{- end }}
{{- $maxSeconds := 9223372036.854775807 }}
{{- range $path, $value := dict "reconciliationPeriod" .Values.reconciliationPeriod "resyncPeriod" .Values.resyncPeriod "syncBatchWindow" .Values.syncBatchWindow "minSyncInterval" .Values.minSyncInterval "routeListingMaxAge" .Values.routeListingMaxAge "batchWriteInterval" .Values.batchWriteInterval "cloud.callTimeout" .Values.cloud.callTimeout "cloud.retryAfterCap" .Values.cloud.retryAfterCap "leaderElection.leaseDuration" .Values.leaderElection.leaseDuration "leaderElection.renewDeadline" .Values.leaderElection.renewDeadline "leaderElection.retryPeriod" .Values.leaderElection.retryPeriod "gracefulShutdownTimeout" .Values.gracefulShutdownTimeout }}
{{- if gt (include "routectl.seconds" $value | float64) $maxSeconds }}
{{- fail (printf "%s %s is longer than Go's longest duration (about 292 years)" $path $value) }}
{{- end }}
{{- end }}
{{- if eq (include "routectl.leading" .) "true" }}
{{- $defaults := include "routectl.binaryDefaults" . | fromYaml }}
{{- $election := dict }}
{{- range $key := list "leaseDuration" "renewDeadline" "retryPeriod" }}
{{- $value := index $.Values.leaderElection $key }}
{{- $_ := set $election $key (ternary (index $defaults $key) $value (kindIs "invalid" $value)) }}
{{- end }}
{{- $lease := include "routectl.seconds" $election.leaseDuration | float64 }}
{{- $renew := include "routectl.seconds" $election.renewDeadline | float64 }}
{{- $retry := include "routectl.seconds" $election.retryPeriod | float64 }}
{{- if gt $lease 2147483647.0 }}
{{- fail (printf "leaderElection.leaseDuration %s is longer than a Lease can say (2147483647s)" $election.leaseDuration) }}
{{- end }}
{{- if not (and (gt $lease $renew) (gt $renew (mulf 1.2 $retry))) }}
{{- fail (printf "leaderElection: leaseDuration (%s) must exceed renewDeadline (%s), which must exceed 1.2 x retryPeriod (%s), as routectl's --leader-elect-* flags require (unset values are routectl's defaults)" $election.leaseDuration $election.renewDeadline $election.retryPeriod) }}
{{- end }}
{{- end }}
{{- $managed := list "--cluster-name" "--cluster-cidr" "--feature-gates" "--route-reconciliation-period" "--route-resync-period" "--route-sync-batch-window" "--min-sync-interval" "--route-listing-max-age" "--retry-failed-syncs" "--batch-writes" "--batch-write-interval" "--provider" "--provider-option" "--cloud-qps" "--cloud-burst" "--max-concurrent-route-operations" "--cloud-call-timeout" "--cloud-max-attempts" "--cloud-retry-after-cap" "--mass-delete-threshold" "--allow-mass-delete" "--leader-elect" "--leader-elect-lease-duration" "--leader-elect-renew-deadline" "--leader-elect-retry-period" "--leader-elect-resource-name" "--leader-elect-resource-namespace" "--metrics-bind-address" "--tls-cert-file" "--tls-private-key-file" "--log-format" "--v" "-v" "--graceful-shutdown-timeout" "--kubeconfig" "--kube-api-qps" "--kube-api-burst" "--secure-port" "--bind-address" "--logging-format" "--cloud-provider" "--routectl-allocate-node-cidrs" "--node-cidr-mask-size" "--node-cidr-mask-size-ipv4" "--node-cidr-mask-size-ipv6" "--service-cluster-ip-range" "--additional-cluster-cidrs" "--pod-cidr-exclude" "--pod-cidr-reuse-delay" "--pod-cidr-claims" "--ipam-event-type" }}
{{/* The flags of `routectl run` the chart leaves to extraArgs (a test keeps the list equal to
routectl's settings table): anything else would stop the pod at start-up. */}}
{{- $extra := list "--allocate-node-cidrs" "--allow-metric-labels" "--allow-metric-labels-manifest" "--allow-untagged-cloud" "--authentication-kubeconfig" "--authentication-skip-lookup" "--authentication-token-webhook-cache-ttl" "--authentication-tolerate-lookup-failure" "--authorization-always-allow-paths" "--authorization-kubeconfig" "--authorization-webhook-cache-authorized-ttl" "--authorization-webhook-cache-unauthorized-ttl" "--cert-dir" "--cidr-allocator-type" "--client-ca-file" "--cloud-config" "--concurrent-node-status-updates" "--concurrent-node-syncs" "--concurrent-service-syncs" "--configure-cloud-routes" "--contention-profiling" "--controller-start-interval" "--controllers" "--disable-http2-serving" "--disabled-metrics" "--enable-leader-migration" "--external-cloud-volume-plugin" "--http2-max-streams-per-connection" "--kube-api-content-type" "--leader-elect-resource-lock" "--leader-migration-config" "--log-flush-frequency" "--log-json-info-buffer-size" "--log-json-split-stream" "--log-text-info-buffer-size" "--log-text-split-stream" "--master" "--min-resync-period" "--node-monitor-period" "--node-status-update-frequency" "--node-sync-period" "--permit-address-sharing" "--permit-port-sharing" "--profiling" "--requestheader-allowed-names" "--requestheader-client-ca-file" "--requestheader-extra-headers-prefix" "--requestheader-group-headers" "--requestheader-uid-headers" "--requestheader-username-headers" "--show-hidden-metrics-for-version" "--tls-cipher-suites" "--tls-curve-preferences" "--tls-min-version" "--tls-sni-cert-key" "--use-service-account-credentials" "--vmodule" "--webhook-bind-address" "--webhook-cert-dir" "--webhook-disable-http2-serving" "--webhook-secure-port" "--webhook-tls-cert-file" "--webhook-tls-cipher-suites" "--webhook-tls-curve-preferences" "--webhook-tls-min-version" "--webhook-tls-private-key-file" "--webhook-tls-sni-cert-key" "--webhooks" }}
{{- range .Values.extraArgs }}
{{- $flag := . | splitList "=" | first }}
{{- if eq $flag "--feature-gates" }}
{{- fail "extraArgs: --feature-gates is managed by the chart; set featureGates (name: true/false) instead, e.g. --set featureGates.CloudControllerManagerWatchBasedRoutesReconciliation=true" }}
{{- end }}
{{- if has $flag $managed }}
{{- fail (printf "extraArgs: %s is managed by the chart; set the matching value instead (see the top of values.yaml)" $flag) }}
{{- end }}
{{- if not (has $flag $extra) }}
{{- fail (printf "extraArgs: %s is not a flag of routectl run (docs/ccm-flags.md lists the CCM's flags it takes; routectl run --help lists them all)" $flag) }}
{{- end }}
{{- end }}
{{- end }}

{{/* Flags that say which cluster and which cloud: shared by `routectl run` and
`routectl plan` (NOTES.txt), one per line. */}}
{{- define "routectl.targetArgs" -}}
{{- if not (kindIs "invalid" .Values.clusterName) }}
--cluster-name={{ .Values.clusterName }}
{{- end }}
--cluster-cidr={{ join "," .Values.clusterCIDRs }}
--provider={{ .Values.provider.name }}
{{- range $key, $value := .Values.provider.options }}
--provider-option={{ $key }}={{ $value }}
{{- end }}
{{- if and .Values.provider.credentials.existingSecret (eq .Values.provider.credentials.mode "file") }}
{{- $dir := .Values.provider.credentials.file.mountPath | trimSuffix "/" }}
{{- range $key, $secretKey := .Values.provider.credentials.file.options }}
--provider-option={{ $key }}={{ $dir }}/{{ $secretKey }}
{{- end }}
{{- end }}
{{- end }}

{{/* Whether leader election is on: routectl's default (on) unless the values say false. */}}
{{- define "routectl.leading" -}}
{{- if eq (toString .Values.leaderElection.enabled) "false" }}false{{ else }}true{{ end }}
{{- end }}

{{/* The --feature-gates value: featureGates, with mode's gate; empty when neither is set. */}}
{{- define "routectl.featureGates" -}}
{{- $gates := deepCopy (.Values.featureGates | default dict) }}
{{- $watch := "CloudControllerManagerWatchBasedRoutesReconciliation" }}
{{- if .Values.mode }}
{{- $want := eq .Values.mode "watch" }}
{{- if and (hasKey $gates $watch) (ne (toString (get $gates $watch)) (toString $want)) }}
{{- fail (printf "featureGates.%s is %v but mode is %s: set one of them (mode %s sets the gate to %v)" $watch (get $gates $watch) .Values.mode .Values.mode $want) }}
{{- end }}
{{- $_ := set $gates $watch $want }}
{{- end }}
{{- $pairs := list }}
{{- range $name := keys $gates | sortAlpha }}
{{- $pairs = append $pairs (printf "%s=%v" $name (get $gates $name)) }}
{{- end }}
{{- join "," $pairs }}
{{- end }}

{{/* Every flag of `routectl run` the chart passes, one per line, then extraArgs. A value left
empty (null) renders no flag: routectl's own default applies. */}}
{{- define "routectl.runArgs" -}}
{{ include "routectl.targetArgs" . }}
{{- with include "routectl.featureGates" . }}
--feature-gates={{ . }}
{{- end }}
{{- if and (eq (toString .Values.mode) "periodic") (not (kindIs "invalid" .Values.reconciliationPeriod)) }}
--route-reconciliation-period={{ .Values.reconciliationPeriod }}
{{- end }}
{{- if not (kindIs "invalid" .Values.resyncPeriod) }}
--route-resync-period={{ .Values.resyncPeriod }}
{{- end }}
{{- if not (kindIs "invalid" .Values.syncBatchWindow) }}
--route-sync-batch-window={{ .Values.syncBatchWindow }}
{{- end }}
{{- if not (kindIs "invalid" .Values.minSyncInterval) }}
--min-sync-interval={{ .Values.minSyncInterval }}
{{- end }}
{{- if not (kindIs "invalid" .Values.routeListingMaxAge) }}
--route-listing-max-age={{ .Values.routeListingMaxAge }}
{{- end }}
{{- if not (kindIs "invalid" .Values.retryFailedSyncs) }}
--retry-failed-syncs={{ .Values.retryFailedSyncs }}
{{- end }}
{{- if not (kindIs "invalid" .Values.batchWrites) }}
--batch-writes={{ .Values.batchWrites }}
{{- end }}
{{- if not (kindIs "invalid" .Values.batchWriteInterval) }}
--batch-write-interval={{ .Values.batchWriteInterval }}
{{- end }}
{{- if not (kindIs "invalid" .Values.cloud.qps) }}
--cloud-qps={{ .Values.cloud.qps }}
{{- end }}
{{- if not (kindIs "invalid" .Values.cloud.burst) }}
--cloud-burst={{ int .Values.cloud.burst }}
{{- end }}
{{- if not (kindIs "invalid" .Values.cloud.maxConcurrentRouteOperations) }}
--max-concurrent-route-operations={{ int .Values.cloud.maxConcurrentRouteOperations }}
{{- end }}
{{- if not (kindIs "invalid" .Values.cloud.callTimeout) }}
--cloud-call-timeout={{ .Values.cloud.callTimeout }}
{{- end }}
{{- if not (kindIs "invalid" .Values.cloud.maxAttempts) }}
--cloud-max-attempts={{ int .Values.cloud.maxAttempts }}
{{- end }}
{{- if not (kindIs "invalid" .Values.cloud.retryAfterCap) }}
--cloud-retry-after-cap={{ .Values.cloud.retryAfterCap }}
{{- end }}
{{- if not (kindIs "invalid" .Values.massDelete.threshold) }}
--mass-delete-threshold={{ .Values.massDelete.threshold }}
{{- end }}
{{- if not (kindIs "invalid" .Values.massDelete.allow) }}
--allow-mass-delete={{ .Values.massDelete.allow }}
{{- end }}
{{- if not (kindIs "invalid" .Values.leaderElection.enabled) }}
--leader-elect={{ .Values.leaderElection.enabled }}
{{- end }}
{{- if eq (include "routectl.leading" .) "true" }}
{{- if not (kindIs "invalid" .Values.leaderElection.leaseDuration) }}
--leader-elect-lease-duration={{ .Values.leaderElection.leaseDuration }}
{{- end }}
{{- if not (kindIs "invalid" .Values.leaderElection.renewDeadline) }}
--leader-elect-renew-deadline={{ .Values.leaderElection.renewDeadline }}
{{- end }}
{{- if not (kindIs "invalid" .Values.leaderElection.retryPeriod) }}
--leader-elect-retry-period={{ .Values.leaderElection.retryPeriod }}
{{- end }}
--leader-elect-resource-name={{ include "routectl.leaseName" . }}
--leader-elect-resource-namespace={{ .Release.Namespace }}
{{- end }}
{{- if not (kindIs "invalid" .Values.kubeApi.qps) }}
--kube-api-qps={{ .Values.kubeApi.qps }}
{{- end }}
{{- if not (kindIs "invalid" .Values.kubeApi.burst) }}
--kube-api-burst={{ int .Values.kubeApi.burst }}
{{- end }}
{{- if .Values.metrics.secure }}
--secure-port={{ int .Values.metrics.port }}
--bind-address={{ .Values.metrics.bindAddress }}
--metrics-bind-address=
{{- if .Values.metrics.tls.existingSecret }}
--tls-cert-file=/etc/routectl/tls/tls.crt
--tls-private-key-file=/etc/routectl/tls/tls.key
{{- end }}
{{- else }}
--secure-port=0
--metrics-bind-address={{ include "routectl.metricsHostPort" . }}
{{- end }}
{{- if not (kindIs "invalid" .Values.logging.format) }}
--log-format={{ .Values.logging.format }}
{{- end }}
{{- if not (kindIs "invalid" .Values.logging.verbosity) }}
--v={{ int .Values.logging.verbosity }}
{{- end }}
{{- if not (kindIs "invalid" .Values.gracefulShutdownTimeout) }}
--graceful-shutdown-timeout={{ .Values.gracefulShutdownTimeout }}
{{- end }}
{{- if not (kindIs "invalid" .Values.nodeIPAM.enabled) }}
--routectl-allocate-node-cidrs={{ .Values.nodeIPAM.enabled }}
{{- end }}
{{- if not (kindIs "invalid" .Values.nodeIPAM.nodeCIDRMaskSize) }}
--node-cidr-mask-size={{ int .Values.nodeIPAM.nodeCIDRMaskSize }}
{{- end }}
{{- if not (kindIs "invalid" .Values.nodeIPAM.nodeCIDRMaskSizeIPv4) }}
--node-cidr-mask-size-ipv4={{ int .Values.nodeIPAM.nodeCIDRMaskSizeIPv4 }}
{{- end }}
{{- if not (kindIs "invalid" .Values.nodeIPAM.nodeCIDRMaskSizeIPv6) }}
--node-cidr-mask-size-ipv6={{ int .Values.nodeIPAM.nodeCIDRMaskSizeIPv6 }}
{{- end }}
{{- with .Values.nodeIPAM.serviceClusterIPRange }}
--service-cluster-ip-range={{ join "," . }}
{{- end }}
{{- with .Values.nodeIPAM.additionalClusterCIDRs }}
--additional-cluster-cidrs={{ join "," . }}
{{- end }}
{{- with .Values.nodeIPAM.exclude }}
--pod-cidr-exclude={{ join "," . }}
{{- end }}
{{- if not (kindIs "invalid" .Values.nodeIPAM.reuseDelay) }}
--pod-cidr-reuse-delay={{ .Values.nodeIPAM.reuseDelay }}
{{- end }}
{{- if not (kindIs "invalid" .Values.nodeIPAM.claims) }}
--pod-cidr-claims={{ .Values.nodeIPAM.claims }}
{{- end }}
{{- if not (kindIs "invalid" .Values.nodeIPAM.eventType) }}
--ipam-event-type={{ .Values.nodeIPAM.eventType }}
{{- end }}
{{- range .Values.extraArgs }}
{{ . }}
{{- end }}
{{- end }}
