{{/*
Names, labels and the checks every render makes.
*/}}

{{- define "agentprocess.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "agentprocess.fullname" -}}
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

{{/* The name of one component's resources: <fullname>-<component>. */}}
{{- define "agentprocess.componentName" -}}
{{- printf "%s-%s" (include "agentprocess.fullname" .root) .component | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "agentprocess.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "agentprocess.version" -}}
{{- .Values.image.tag | default .Chart.AppVersion }}
{{- end }}

{{- define "agentprocess.selectorLabels" -}}
app.kubernetes.io/name: {{ include "agentprocess.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "agentprocess.labels" -}}
helm.sh/chart: {{ include "agentprocess.chart" . }}
{{ include "agentprocess.selectorLabels" . }}
app.kubernetes.io/version: {{ include "agentprocess.version" . | trunc 63 | trimSuffix "-" | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: agentprocess
{{- end }}

{{/* Selector labels of one component; call with (dict "root" $ "component" "api"). */}}
{{- define "agentprocess.componentSelectorLabels" -}}
{{ include "agentprocess.selectorLabels" .root }}
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{- define "agentprocess.componentLabels" -}}
{{ include "agentprocess.labels" .root }}
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{- define "agentprocess.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "agentprocess.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "agentprocess.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (include "agentprocess.version" .) }}
{{- end }}
{{- end }}

{{/* The Secret the pods read: the chart's own, or existingSecret. */}}
{{- define "agentprocess.secretName" -}}
{{- default (include "agentprocess.fullname" .) .Values.existingSecret }}
{{- end }}

{{/*
A number as the server parses it: integers without a decimal point or an exponent
(values arrive as floats), fractions as they are.
*/}}
{{- define "agentprocess.number" -}}
{{- if eq (float64 .) (floor .) }}{{ int64 . }}{{ else }}{{ . }}{{ end }}
{{- end }}

{{/*
Refuses values the server would refuse at start, with a message that says what to set.
Every template includes it, so no render gets past a broken set of values.
*/}}
{{- define "agentprocess.validate" -}}
{{- $v := .Values }}
{{- $missing := list }}
{{- if not $v.publicUrl }}
{{- $missing = append $missing "publicUrl (how callers reach the API, https://process.example.com)" }}
{{- end }}
{{- if and (not $v.existingSecret) (not $v.database.url) }}
{{- $missing = append $missing "database.url (postgres://user:password@host:5432/database) or existingSecret" }}
{{- end }}
{{- if and (not $v.s3.bucket) (not $v.evidence.existingClaim) }}
{{- $missing = append $missing "s3.bucket (evidence in S3) or evidence.existingClaim (evidence on a ReadWriteMany volume)" }}
{{- end }}
{{- if $missing }}
{{- fail (printf "\n\nagentprocess: set %s.\nSee docs/operations.md." (join ", and " $missing)) }}
{{- end }}
{{- if and $v.s3.bucket $v.evidence.existingClaim }}
{{- fail "\n\nagentprocess: evidence goes to S3 or to a volume, not both: set s3.bucket or evidence.existingClaim, not both." }}
{{- end }}
{{- if ne (empty $v.s3.accessKeyId) (empty $v.s3.secretAccessKey) }}
{{- fail "\n\nagentprocess: give both s3.accessKeyId and s3.secretAccessKey, or neither (then the default AWS credential chain is used, e.g. IRSA)." }}
{{- end }}
{{- if $v.existingSecret }}
{{- range $key, $value := dict "database.url" $v.database.url "redis.url" $v.redis.url "urlSecret" $v.urlSecret "secretKey" $v.secretKey "signup.codes" $v.signup.codes "s3.accessKeyId" $v.s3.accessKeyId "s3.secretAccessKey" $v.s3.secretAccessKey "otel.headers" $v.otel.headers }}
{{- if $value }}
{{- fail (printf "\n\nagentprocess: with existingSecret, %s belongs in that Secret, not in the values." $key) }}
{{- end }}
{{- end }}
{{- end }}
{{- if and (eq $v.signup.policy "invite") (not $v.signup.codes) (not $v.existingSecret) }}
{{- fail "\n\nagentprocess: signup.policy invite needs sign-up codes: list them in signup.codes (or keep them in existingSecret as AGENTPROCESS_SIGNUP_CODES), or set signup.policy to open or closed." }}
{{- end }}
{{- if and $v.ingress.enabled (not $v.trustedProxies) }}
{{- fail "\n\nagentprocess: ingress.enabled needs trustedProxies: the ingress controller's own pod addresses, or the narrowest network holding only them (never the cluster's whole pod network). Without it every client has the ingress's address and shares its per-address limits." }}
{{- end }}
{{- $grace := add (int64 $v.shutdown.graceSeconds) (int64 $v.shutdown.delaySeconds) }}
{{- if le (int64 $v.terminationGracePeriodSeconds) $grace }}
{{- fail (printf "\n\nagentprocess: terminationGracePeriodSeconds (%d) must be above shutdown.delaySeconds + shutdown.graceSeconds (%d), or Kubernetes kills calls still in flight." (int64 $v.terminationGracePeriodSeconds) $grace) }}
{{- end }}
{{- end }}

{{/*
A key the chart's Secret holds (the URL-signing key, the sealing key): the values' own;
else the one the chart's Secret already holds (so upgrades keep it); else a new one:
base64 of 48 random printable bytes, more than the 32 bytes the server needs. Computed
once per render and kept, so the Secret and the checksum that restarts pods agree.
Call with (dict "root" $ "key" "AGENTPROCESS_URL_SECRET" "value" .Values.urlSecret).
*/}}
{{- define "agentprocess.keptKey" -}}
{{- $values := .root.Values }}
{{- $memo := printf "__agentprocess_%s" .key }}
{{- if not (hasKey $values $memo) }}
{{- $secret := .value }}
{{- if not $secret }}
{{- $existing := lookup "v1" "Secret" .root.Release.Namespace (include "agentprocess.fullname" .root) }}
{{- if and $existing $existing.data (hasKey $existing.data .key) }}
{{- $secret = index $existing.data .key | b64dec }}
{{- else }}
{{- $secret = randAscii 48 | b64enc }}
{{- end }}
{{- end }}
{{- $_ := set $values $memo $secret }}
{{- end }}
{{- index $values $memo }}
{{- end }}

{{/* The URL-signing key, AGENTPROCESS_URL_SECRET. */}}
{{- define "agentprocess.urlSecret" -}}
{{- include "agentprocess.keptKey" (dict "root" . "key" "AGENTPROCESS_URL_SECRET" "value" .Values.urlSecret) }}
{{- end }}

{{/*
The key that seals secrets kept in the database, AGENTPROCESS_SECRET_KEY: a key of its
own, never derived from the URL-signing key.
*/}}
{{- define "agentprocess.secretKey" -}}
{{- include "agentprocess.keptKey" (dict "root" . "key" "AGENTPROCESS_SECRET_KEY" "value" .Values.secretKey) }}
{{- end }}

{{/* Environment every server container shares: the Secret's keys and the pod's identity. */}}
{{- define "agentprocess.podEnv" -}}
- name: K8S_POD_NAME
  valueFrom:
    fieldRef:
      fieldPath: metadata.name
- name: K8S_NAMESPACE_NAME
  valueFrom:
    fieldRef:
      fieldPath: metadata.namespace
- name: OTEL_RESOURCE_ATTRIBUTES
  value: {{ include "agentprocess.resourceAttributes" . | quote }}
- name: AGENTPROCESS_DATABASE_URL
  valueFrom:
    secretKeyRef:
      name: {{ include "agentprocess.secretName" . }}
      key: AGENTPROCESS_DATABASE_URL
- name: AGENTPROCESS_REDIS_URL
  valueFrom:
    secretKeyRef:
      name: {{ include "agentprocess.secretName" . }}
      key: AGENTPROCESS_REDIS_URL
      optional: true
- name: AGENTPROCESS_SECRET_KEY
  valueFrom:
    secretKeyRef:
      name: {{ include "agentprocess.secretName" . }}
      key: AGENTPROCESS_SECRET_KEY
- name: AGENTPROCESS_PREVIOUS_SECRET_KEYS
  valueFrom:
    secretKeyRef:
      name: {{ include "agentprocess.secretName" . }}
      key: AGENTPROCESS_PREVIOUS_SECRET_KEYS
      optional: true
- name: OTEL_EXPORTER_OTLP_HEADERS
  valueFrom:
    secretKeyRef:
      name: {{ include "agentprocess.secretName" . }}
      key: OTEL_EXPORTER_OTLP_HEADERS
      optional: true
{{- end }}

{{- define "agentprocess.resourceAttributes" -}}
{{- $attributes := list "k8s.namespace.name=$(K8S_NAMESPACE_NAME)" "k8s.pod.name=$(K8S_POD_NAME)" (printf "service.version=%s" (include "agentprocess.version" .)) }}
{{- range $key, $value := .Values.otel.resourceAttributes }}
{{- $attributes = append $attributes (printf "%s=%s" $key (toString $value)) }}
{{- end }}
{{- join "," $attributes }}
{{- end }}

{{/* The three probes of a server container; call with (dict "values" .Values.api "port" "http"). */}}
{{- define "agentprocess.probes" -}}
startupProbe:
  httpGet:
    path: /healthz
    port: {{ .port }}
  {{- toYaml .values.startupProbe | nindent 2 }}
livenessProbe:
  httpGet:
    path: /healthz
    port: {{ .port }}
  {{- toYaml .values.livenessProbe | nindent 2 }}
readinessProbe:
  httpGet:
    path: /readyz
    port: {{ .port }}
  {{- toYaml .values.readinessProbe | nindent 2 }}
{{- end }}

{{/* Topology spread constraints of a component; call with (dict "root" $ "component" "api" "values" .Values.api). */}}
{{- define "agentprocess.topologySpread" -}}
{{- if .values.topologySpreadConstraints }}
{{- toYaml .values.topologySpreadConstraints }}
{{- else if .values.topologySpread.enabled }}
{{- $root := .root }}
{{- $component := .component }}
{{- $spread := .values.topologySpread }}
{{- range $spread.topologyKeys }}
- maxSkew: {{ $spread.maxSkew }}
  topologyKey: {{ . }}
  whenUnsatisfiable: {{ $spread.whenUnsatisfiable }}
  labelSelector:
    matchLabels:
      {{- include "agentprocess.componentSelectorLabels" (dict "root" $root "component" $component) | nindent 6 }}
  matchLabelKeys:
    - pod-template-hash
{{- end }}
{{- end }}
{{- end }}

{{/* A PodDisruptionBudget's budget: maxUnavailable when given, else minAvailable. */}}
{{- define "agentprocess.budget" -}}
{{- if ne (toString .maxUnavailable) "" -}}
maxUnavailable: {{ .maxUnavailable | toYaml }}
{{- else -}}
minAvailable: {{ .minAvailable | toYaml }}
{{- end }}
{{- end }}

{{/* ConfigMap settings both services read. Secrets are never here: see secret.yaml. */}}
{{- define "agentprocess.sharedConfig" -}}
{{- $v := .Values -}}
AGENTPROCESS_REDIS_PREFIX: {{ $v.redis.prefix | quote }}
AGENTPROCESS_REDIS_PARTITIONS: {{ include "agentprocess.number" $v.redis.partitions | quote }}
{{- if $v.redis.cluster }}
AGENTPROCESS_REDIS_CLUSTER: "true"
{{- end }}
AGENTPROCESS_REDIS_TIMEOUT_SECONDS: {{ include "agentprocess.number" $v.redis.timeoutSeconds | quote }}
AGENTPROCESS_LOG_JSON: {{ $v.log.json | toString | quote }}
{{- if $v.log.filter }}
AGENTPROCESS_LOG: {{ $v.log.filter | quote }}
{{- end }}
AGENTPROCESS_SHUTDOWN_GRACE_SECONDS: {{ include "agentprocess.number" $v.shutdown.graceSeconds | quote }}
{{- if gt (float64 $v.shutdown.delaySeconds) 0.0 }}
AGENTPROCESS_SHUTDOWN_DELAY_SECONDS: {{ include "agentprocess.number" $v.shutdown.delaySeconds | quote }}
{{- end }}
{{- if $v.metrics.prometheus.enabled }}
AGENTPROCESS_METRICS_LISTEN: {{ printf "0.0.0.0:%d" (int64 $v.metrics.prometheus.port) | quote }}
{{- end }}
{{- if $v.metrics.organizations }}
AGENTPROCESS_METRICS_ORGANIZATIONS: {{ join "," $v.metrics.organizations | quote }}
{{- end }}
{{- if $v.otel.endpoint }}
OTEL_EXPORTER_OTLP_ENDPOINT: {{ $v.otel.endpoint | quote }}
OTEL_EXPORTER_OTLP_PROTOCOL: {{ $v.otel.protocol | quote }}
{{- if $v.otel.tracesSampler }}
OTEL_TRACES_SAMPLER: {{ $v.otel.tracesSampler | quote }}
{{- end }}
{{- if ne (toString $v.otel.tracesSamplerArg) "" }}
OTEL_TRACES_SAMPLER_ARG: {{ $v.otel.tracesSamplerArg | toString | quote }}
{{- end }}
{{- if $v.otel.metricExportInterval }}
OTEL_METRIC_EXPORT_INTERVAL: {{ include "agentprocess.number" $v.otel.metricExportInterval | quote }}
{{- end }}
{{- end }}
{{- end }}
