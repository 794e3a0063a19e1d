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

{{/* The ServiceAccount's name. */}}
{{- define "routectl.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "routectl.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
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
{{- $creds := .Values.provider.credentials }}
{{- if $creds.existingSecret }}
{{- if and (eq $creds.mode "env") (not $creds.env) }}
{{- fail "provider.credentials.mode is env but provider.credentials.env is empty: map environment variable names to keys of the Secret, e.g. {HCLOUD_TOKEN: token}" }}
{{- end }}
{{- if and (eq $creds.mode "file") (not $creds.file.options) (not $creds.file.env) }}
{{- fail "provider.credentials.mode is file but neither provider.credentials.file.options nor provider.credentials.file.env says where routectl finds the file, e.g. file.options: {token-file: token}" }}
{{- end }}
{{- end }}
{{- $managed := list "--cluster-name" "--cluster-cidr" "--feature-gates" "--route-reconciliation-period" "--route-resync-period" "--route-sync-batch-window" "--min-sync-interval" "--route-listing-max-age" "--retry-failed-syncs" "--batch-writes" "--batch-write-interval" "--provider" "--provider-option" "--cloud-qps" "--cloud-burst" "--max-concurrent-route-operations" "--cloud-call-timeout" "--cloud-max-attempts" "--cloud-retry-after-cap" "--mass-delete-threshold" "--allow-mass-delete" "--leader-elect" "--leader-elect-lease-duration" "--leader-elect-renew-deadline" "--leader-elect-retry-period" "--leader-elect-resource-name" "--leader-elect-resource-namespace" "--metrics-bind-address" "--log-format" "--v" "-v" "--graceful-shutdown-timeout" "--kubeconfig" "--allocate-node-cidrs" "--node-cidr-mask-size" "--node-cidr-mask-size-ipv4" "--node-cidr-mask-size-ipv6" "--service-cluster-ip-range" "--additional-cluster-cidrs" "--pod-cidr-exclude" "--pod-cidr-reuse-delay" "--pod-cidr-claims" "--ipam-event-type" }}
{{- range .Values.extraArgs }}
{{- $flag := . | splitList "=" | first }}
{{- if has $flag $managed }}
{{- fail (printf "extraArgs: %s is managed by the chart; set the matching value instead (see the top of values.yaml)" $flag) }}
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
--metrics-bind-address=0.0.0.0:{{ int .Values.metrics.port }}
--log-format={{ .Values.logging.format }}
--v={{ int .Values.logging.verbosity }}
--graceful-shutdown-timeout={{ .Values.gracefulShutdownTimeout }}
--allocate-node-cidrs={{ .Values.nodeIPAM.enabled }}
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
