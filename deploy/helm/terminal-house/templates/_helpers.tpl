{{/* Every topic has 12 partitions (packages/contracts); more consumers than that sit idle. */}}
{{- define "th.partitions" -}}12{{- end -}}

{{- define "th.name" -}}
{{- printf "%s-%s" .root.Release.Name .service | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "th.selectorLabels" -}}
app.kubernetes.io/name: terminal-house
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .service }}
{{- end -}}

{{- define "th.labels" -}}
{{ include "th.selectorLabels" . }}
app.kubernetes.io/part-of: terminal-house
app.kubernetes.io/version: {{ .root.Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .root.Chart.Name .root.Chart.Version }}
{{- end -}}

{{- define "th.image" -}}
{{- $repository := required "image.repository is required: the registry path of the image built from the repository's Dockerfile" .Values.image.repository -}}
{{- printf "%s:%s" $repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}

{{- define "th.secretName" -}}
{{- default (printf "%s-secrets" .Release.Name) .Values.secrets.existingSecret -}}
{{- end -}}

{{/* Fails the render, naming the value, when a required setting is missing. */}}
{{- define "th.validate" -}}
{{- $_ := include "th.image" . -}}
{{- $_ := required "kafka.brokers is required: the comma-separated host:port list of your Kafka bootstrap brokers" .Values.kafka.brokers -}}
{{- if not .Values.secrets.existingSecret -}}
{{- $_ := required "postgres.url is required (or secrets.existingSecret with DATABASE_URL): postgres://user:password@host:5432/database" .Values.postgres.url -}}
{{- $_ := required "redis.url is required (or secrets.existingSecret with REDIS_URL): redis://:password@host:6379" .Values.redis.url -}}
{{- $_ := required "secrets.keyPepper is required (or secrets.existingSecret with KEY_PEPPER): 32 bytes, e.g. `openssl rand -hex 32`" .Values.secrets.keyPepper -}}
{{- $_ := required "secrets.internalToken is required (or secrets.existingSecret with INTERNAL_TOKEN): at least 16 characters" .Values.secrets.internalToken -}}
{{- $_ := required "secrets.sessionSecret is required (or secrets.existingSecret with SESSION_SECRET): at least 32 characters, e.g. `openssl rand -hex 32`" .Values.secrets.sessionSecret -}}
{{- $_ := required "secrets.webhookSecretKey is required (or secrets.existingSecret with WEBHOOK_SECRET_KEY): id:key pairs, e.g. k1:$(openssl rand -hex 32)" .Values.secrets.webhookSecretKey -}}
{{- end -}}
{{- if and .Values.otel.enabled (not .Values.otel.endpoint) -}}
{{- fail "otel.endpoint is required when otel.enabled is true: the OTLP/HTTP collector URL" -}}
{{- end -}}
{{- range $service, $spec := .Values.services -}}
{{- if and $spec.autoscaling $spec.autoscaling.enabled -}}
{{- if gt (int $spec.autoscaling.maxReplicas) (int (include "th.partitions" $)) -}}
{{- fail (printf "services.%s.autoscaling.maxReplicas is %v: it may not exceed the %s partitions of a topic" $service $spec.autoscaling.maxReplicas (include "th.partitions" $)) -}}
{{- end -}}
{{- if gt (int $spec.autoscaling.minReplicas) (int $spec.autoscaling.maxReplicas) -}}
{{- fail (printf "services.%s.autoscaling.minReplicas exceeds its maxReplicas" $service) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* Secret data shared by the release's Secret and the migration hook's copy of it. */}}
{{- define "th.secretData" -}}
KEY_PEPPER: {{ .Values.secrets.keyPepper | b64enc | quote }}
INTERNAL_TOKEN: {{ .Values.secrets.internalToken | b64enc | quote }}
WEBHOOK_SECRET_KEY: {{ .Values.secrets.webhookSecretKey | b64enc | quote }}
SESSION_SECRET: {{ .Values.secrets.sessionSecret | b64enc | quote }}
DATABASE_URL: {{ .Values.postgres.url | b64enc | quote }}
REDIS_URL: {{ .Values.redis.url | b64enc | quote }}
{{- end -}}

{{- define "th.secretEnv" -}}
- name: {{ .env }}
  valueFrom:
    secretKeyRef:
      name: {{ .secret }}
      key: {{ .key }}
{{- end -}}

{{/*
The secrets a service reads, as env entries (variable names from services/<name>/src/config.ts).
Every service's config refuses its development defaults when NODE_ENV=production, so each one
gets every secret its config declares; the migration Job gets them all.
*/}}
{{- define "th.secretEnvOf" -}}
{{- $secret := default (include "th.secretName" .root) .secret -}}
{{- $needs := list "DATABASE_URL" "REDIS_URL" "INTERNAL_TOKEN" -}}
{{- if or (eq .service "gateway") (eq .service "keys") (eq .service "*") -}}
{{- $needs = append $needs "KEY_PEPPER" -}}
{{- end -}}
{{- if or (eq .service "gateway") (eq .service "*") -}}
{{- $needs = append $needs "SESSION_SECRET" -}}
{{- end -}}
{{- range $needs }}
{{ include "th.secretEnv" (dict "env" . "key" . "secret" $secret) }}
{{- end }}
{{- if or (eq .service "webhook-dispatcher") (eq .service "*") }}
{{ include "th.secretEnv" (dict "env" "SECRET_KEYS" "key" "WEBHOOK_SECRET_KEY" "secret" $secret) }}
{{- end }}
{{- end -}}

{{/* Internal URLs of the other services, for the gateway and the dispatcher. */}}
{{- define "th.serviceUrl" -}}
{{- $spec := index .root.Values.services .service -}}
{{- printf "http://%s:%v" (include "th.name" .) $spec.port -}}
{{- end -}}
