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
{{- fail "provider.name is required: the provider plugin to use, e.g. --set provider.name=aws (or hcloud; fake is an in-memory cloud for demos)" }}
{{- end }}
{{- if and (gt (int .Values.replicaCount) 1) (not .Values.leaderElection.enabled) }}
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
{{- $maxSeconds := 9223372036.854775807 }}
{{- range $path, $value := dict "reconciliationPeriod" .Values.reconciliationPeriod "resyncPeriod" .Values.resyncPeriod "syncBatchWindow" .Values.syncBatchWindow "minSyncInterval" .Values.minSyncInterval "routeListingMaxAge" .Values.routeListingMaxAge "batchWriteInterval" .Values.batchWriteInterval "cloud.callTimeout" .Values.cloud.callTimeout "cloud.retryAfterCap" .Values.cloud.retryAfterCap "leaderElection.leaseDuration" .Values.leaderElection.leaseDuration "leaderElection.renewDeadline" .Values.leaderElection.renewDeadline "leaderElection.retryPeriod" .Values.leaderElection.retryPeriod "gracefulShutdownTimeout" .Values.gracefulShutdownTimeout }}
{{- if gt (include "routectl.seconds" $value | float64) $maxSeconds }}
{{- fail (printf "%s %s is longer than Go's longest duration (about 292 years)" $path $value) }}
{{- end }}
{{- end }}
{{- if .Values.leaderElection.enabled }}
{{- $lease := include "routectl.seconds" .Values.leaderElection.leaseDuration | float64 }}
{{- $renew := include "routectl.seconds" .Values.leaderElection.renewDeadline | float64 }}
{{- $retry := include "routectl.seconds" .Values.leaderElection.retryPeriod | float64 }}
{{- if gt $lease 2147483647.0 }}
{{- fail (printf "leaderElection.leaseDuration %s is longer than a Lease can say (2147483647s)" .Values.leaderElection.leaseDuration) }}
{{- end }}
{{- if not (and (gt $lease $renew) (gt $renew (mulf 1.2 $retry))) }}
{{- fail (printf "leaderElection: leaseDuration (%s) must exceed renewDeadline (%s), which must exceed 1.2 x retryPeriod (%s), as routectl's --leader-elect-* flags require" .Values.leaderElection.leaseDuration .Values.leaderElection.renewDeadline .Values.leaderElection.retryPeriod) }}
{{- end }}
{{- end }}
{{- $managed := list "--cluster-name" "--cluster-cidr" "--feature-gates" "--route-reconciliation-period" "--route-resync-period" "--route-sync-batch-window" "--min-sync-interval" "--route-listing-max-age" "--retry-failed-syncs" "--batch-writes" "--batch-write-interval" "--provider" "--provider-option" "--cloud-qps" "--cloud-burst" "--max-concurrent-route-operations" "--cloud-call-timeout" "--cloud-max-attempts" "--cloud-retry-after-cap" "--mass-delete-threshold" "--allow-mass-delete" "--leader-elect" "--leader-elect-lease-duration" "--leader-elect-renew-deadline" "--leader-elect-retry-period" "--leader-elect-resource-name" "--leader-elect-resource-namespace" "--metrics-bind-address" "--log-format" "--v" "-v" "--graceful-shutdown-timeout" "--kubeconfig" "--kube-api-qps" "--kube-api-burst" "--secure-port" "--bind-address" "--logging-format" "--cloud-provider" "--routectl-allocate-node-cidrs" "--node-cidr-mask-size" "--node-cidr-mask-size-ipv4" "--node-cidr-mask-size-ipv6" "--service-cluster-ip-range" "--additional-cluster-cidrs" "--pod-cidr-exclude" "--pod-cidr-reuse-delay" "--pod-cidr-claims" "--ipam-event-type" }}
{{/* The flags of `routectl run` the chart leaves to extraArgs (a test keeps the list equal to
routectl's settings table): anything else would stop the pod at start-up. */}}
{{- $extra := list "--allocate-node-cidrs" "--allow-untagged-cloud" "--concurrent-node-status-updates" "--disable-http2-serving" "--tls-curve-preferences" "--webhook-disable-http2-serving" "--webhook-tls-cert-file" "--webhook-tls-cipher-suites" "--webhook-tls-curve-preferences" "--webhook-tls-min-version" "--webhook-tls-private-key-file" "--webhook-tls-sni-cert-key" "--allow-metric-labels" "--allow-metric-labels-manifest" "--authentication-kubeconfig" "--authentication-skip-lookup" "--authentication-token-webhook-cache-ttl" "--authentication-tolerate-lookup-failure" "--authorization-always-allow-paths" "--authorization-kubeconfig" "--authorization-webhook-cache-authorized-ttl" "--authorization-webhook-cache-unauthorized-ttl" "--cert-dir" "--cidr-allocator-type" "--client-ca-file" "--cloud-config" "--concurrent-node-syncs" "--concurrent-service-syncs" "--configure-cloud-routes" "--contention-profiling" "--controller-start-interval" "--controllers" "--disabled-metrics" "--enable-leader-migration" "--external-cloud-volume-plugin" "--http2-max-streams-per-connection" "--kube-api-content-type" "--leader-elect-resource-lock" "--leader-migration-config" "--log-flush-frequency" "--log-json-info-buffer-size" "--log-json-split-stream" "--log-text-info-buffer-size" "--log-text-split-stream" "--master" "--min-resync-period" "--node-monitor-period" "--node-status-update-frequency" "--node-sync-period" "--permit-address-sharing" "--permit-port-sharing" "--profiling" "--requestheader-allowed-names" "--requestheader-client-ca-file" "--requestheader-extra-headers-prefix" "--requestheader-group-headers" "--requestheader-uid-headers" "--requestheader-username-headers" "--show-hidden-metrics-for-version" "--tls-cert-file" "--tls-cipher-suites" "--tls-min-version" "--tls-private-key-file" "--tls-sni-cert-key" "--use-service-account-credentials" "--vmodule" "--webhook-bind-address" "--webhook-cert-dir" "--webhook-secure-port" "--webhooks" }}
{{- range .Values.extraArgs }}
{{- $flag := . | splitList "=" | first }}
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
--cluster-name={{ .Values.clusterName }}
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

{{/* Every flag of `routectl run` the chart manages, one per line, then extraArgs. */}}
{{- define "routectl.runArgs" -}}
{{ include "routectl.targetArgs" . }}
{{- if eq .Values.mode "watch" }}
--feature-gates=CloudControllerManagerWatchBasedRoutesReconciliation=true
{{- else }}
--feature-gates=CloudControllerManagerWatchBasedRoutesReconciliation=false
--route-reconciliation-period={{ .Values.reconciliationPeriod }}
{{- end }}
--route-resync-period={{ .Values.resyncPeriod }}
--route-sync-batch-window={{ .Values.syncBatchWindow }}
--min-sync-interval={{ .Values.minSyncInterval }}
--route-listing-max-age={{ .Values.routeListingMaxAge }}
--retry-failed-syncs={{ .Values.retryFailedSyncs }}
--batch-writes={{ .Values.batchWrites }}
--batch-write-interval={{ .Values.batchWriteInterval }}
--cloud-qps={{ .Values.cloud.qps }}
--cloud-burst={{ int .Values.cloud.burst }}
--max-concurrent-route-operations={{ int .Values.cloud.maxConcurrentRouteOperations }}
--cloud-call-timeout={{ .Values.cloud.callTimeout }}
--cloud-max-attempts={{ int .Values.cloud.maxAttempts }}
--cloud-retry-after-cap={{ .Values.cloud.retryAfterCap }}
--mass-delete-threshold={{ .Values.massDelete.threshold }}
--allow-mass-delete={{ .Values.massDelete.allow }}
--leader-elect={{ .Values.leaderElection.enabled }}
{{- if .Values.leaderElection.enabled }}
--leader-elect-lease-duration={{ .Values.leaderElection.leaseDuration }}
--leader-elect-renew-deadline={{ .Values.leaderElection.renewDeadline }}
--leader-elect-retry-period={{ .Values.leaderElection.retryPeriod }}
--leader-elect-resource-name={{ include "routectl.leaseName" . }}
--leader-elect-resource-namespace={{ .Release.Namespace }}
{{- end }}
--kube-api-qps={{ .Values.kubeApi.qps }}
--kube-api-burst={{ int .Values.kubeApi.burst }}
{{- if .Values.metrics.secure }}
--secure-port={{ int .Values.metrics.port }}
--bind-address={{ .Values.metrics.bindAddress }}
--metrics-bind-address=
{{- else }}
--secure-port=0
--metrics-bind-address={{ include "routectl.metricsHostPort" . }}
{{- end }}
--log-format={{ .Values.logging.format }}
--v={{ int .Values.logging.verbosity }}
--graceful-shutdown-timeout={{ .Values.gracefulShutdownTimeout }}
--routectl-allocate-node-cidrs={{ .Values.nodeIPAM.enabled }}
--node-cidr-mask-size={{ int .Values.nodeIPAM.nodeCIDRMaskSize }}
--node-cidr-mask-size-ipv4={{ int .Values.nodeIPAM.nodeCIDRMaskSizeIPv4 }}
--node-cidr-mask-size-ipv6={{ int .Values.nodeIPAM.nodeCIDRMaskSizeIPv6 }}
{{- with .Values.nodeIPAM.serviceClusterIPRange }}
--service-cluster-ip-range={{ join "," . }}
{{- end }}
{{- with .Values.nodeIPAM.additionalClusterCIDRs }}
--additional-cluster-cidrs={{ join "," . }}
{{- end }}
{{- with .Values.nodeIPAM.exclude }}
--pod-cidr-exclude={{ join "," . }}
{{- end }}
--pod-cidr-reuse-delay={{ .Values.nodeIPAM.reuseDelay }}
--pod-cidr-claims={{ .Values.nodeIPAM.claims }}
--ipam-event-type={{ .Values.nodeIPAM.eventType }}
{{- range .Values.extraArgs }}
{{ . }}
{{- end }}
{{- end }}
