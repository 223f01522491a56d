{{/* Every topic has 12 partitions (packages/contracts); more consumers than that sit idle. */}}
{{/*
A topic's partitions in the topic plan: files/topic-plan.json, the plan `npm run topics` applies,
kept equal to it by test/deploy-chart.test.ts.
*/}}
{{- define "th.partitionsOf" -}}
{{- $plan := .root.Files.Get "files/topic-plan.json" | fromJson -}}
{{- required (printf "topic %s is not in files/topic-plan.json" .topic) (index $plan.partitions .topic) | int -}}
{{- end -}}

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
{{- include "th.validateKafka" . -}}
{{- if not .Values.secrets.existingSecret -}}
{{- $_ := required "postgres.url is required (or secrets.existingSecret with DATABASE_URL): postgres://user:password@host:5432/database" .Values.postgres.url -}}
{{- $_ := required "redis.url is required (or secrets.existingSecret with REDIS_URL): redis://:password@host:6379" .Values.redis.url -}}
{{- $_ := required "secrets.keyPepper is required (or secrets.existingSecret with KEY_PEPPER): 32 bytes, e.g. `openssl rand -hex 32`" .Values.secrets.keyPepper -}}
{{- include "th.validateSigningRoots" . -}}
{{- $_ := required "secrets.sessionSecret is required (or secrets.existingSecret with SESSION_SECRET): at least 32 characters, e.g. `openssl rand -hex 32`" .Values.secrets.sessionSecret -}}
{{- $_ := required "secrets.webhookSecretKey is required (or secrets.existingSecret with WEBHOOK_SECRET_KEY): id:key pairs, e.g. k1:$(openssl rand -hex 32)" .Values.secrets.webhookSecretKey -}}
{{- $_ := required "secrets.stripeSecretKey is required (or secrets.existingSecret with STRIPE_SECRET_KEY): Stripe's secret API key, sk_live_… (docs/operations.md, \"Stripe\")" .Values.secrets.stripeSecretKey -}}
{{- $_ := required "secrets.stripeWebhookSecret is required (or secrets.existingSecret with STRIPE_WEBHOOK_SECRET): the whsec_… signing secret of the webhook endpoint registered at Stripe" .Values.secrets.stripeWebhookSecret -}}
{{- end -}}
{{- include "th.validatePayments" . -}}
{{- include "th.validateNetworkPolicy" . -}}
{{- if and .Values.otel.enabled (not .Values.otel.endpoint) -}}
{{- fail "otel.endpoint is required when otel.enabled is true: the OTLP/HTTP collector URL" -}}
{{- end -}}
{{- range $service, $spec := .Values.services -}}
{{- if and $spec.autoscaling $spec.autoscaling.enabled -}}
{{- if $spec.autoscaling.lag -}}
{{- $partitions := include "th.partitionsOf" (dict "root" $ "topic" $spec.autoscaling.lag.topic) -}}
{{- if gt (int $spec.autoscaling.maxReplicas) (int $partitions) -}}
{{- fail (printf "services.%s.autoscaling.maxReplicas is %v: it may not exceed the %s partitions of %s in the topic plan (a replica beyond them would sit idle)" $service $spec.autoscaling.maxReplicas $partitions $spec.autoscaling.lag.topic) -}}
{{- end -}}
{{- end -}}
{{- if gt (int $spec.autoscaling.minReplicas) (int $spec.autoscaling.maxReplicas) -}}
{{- fail (printf "services.%s.autoscaling.minReplicas exceeds its maxReplicas" $service) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* Each tier's Stripe Price, required: production bills through Stripe (decision 0360). */}}
{{- define "th.validatePayments" -}}
{{- range $tier := list "starter" "operator" "team" "custom" -}}
{{- $_ := required (printf "payments.stripe.prices.%s is required: the Stripe Price id (price_…) of the %s tier's monthly subscription (docs/operations.md, \"Stripe\")" $tier $tier) (index $.Values.payments.stripe.prices $tier) -}}
{{- end -}}
{{- end -}}

{{/*
The keys service's payment settings (variable names from services/keys/src/config.ts), as env
entries: in its ConfigMap's place for the migration Job, which reads the whole config too.
*/}}
{{- define "th.paymentSettings" -}}
PAYMENT_PROVIDER: stripe
PAYMENT_GRACE_DAYS: {{ .Values.payments.graceDays | quote }}
STRIPE_PRICE_STARTER: {{ .Values.payments.stripe.prices.starter | quote }}
STRIPE_PRICE_OPERATOR: {{ .Values.payments.stripe.prices.operator | quote }}
STRIPE_PRICE_TEAM: {{ .Values.payments.stripe.prices.team | quote }}
STRIPE_PRICE_CUSTOM: {{ .Values.payments.stripe.prices.custom | quote }}
{{- end -}}

{{/* Secret data shared by the release's Secret and the migration hook's copy of it. */}}
{{- define "th.secretData" -}}
KEY_PEPPER: {{ .Values.secrets.keyPepper | b64enc | quote }}
WEBHOOK_SECRET_KEY: {{ .Values.secrets.webhookSecretKey | b64enc | quote }}
SESSION_SECRET: {{ .Values.secrets.sessionSecret | b64enc | quote }}
DATABASE_URL: {{ .Values.postgres.url | b64enc | quote }}
REDIS_URL: {{ .Values.redis.url | b64enc | quote }}
STRIPE_SECRET_KEY: {{ .Values.secrets.stripeSecretKey | b64enc | quote }}
STRIPE_WEBHOOK_SECRET: {{ .Values.secrets.stripeWebhookSecret | b64enc | quote }}
{{- end -}}

{{/*
Who calls whose internal API (docs/architecture.md): each receiver and the callers it accepts,
as each service's INTERNAL_RECEIVER in services/<name>/src/config.ts declares. It decides each
receiver's INTERNAL_CALLER_KEYS and which pods its NetworkPolicy admits to its public port.
*/}}
{{- define "th.internalCallers" -}}
keys: [gateway]
quota-ledger: [gateway, webhook-dispatcher]
parcels: [gateway]
matcher: [gateway, webhook-dispatcher]
pipeline: [gateway]
webhook-dispatcher: [gateway]
{{- end -}}

{{/* The Secret's key holding a caller's signing root, e.g. INTERNAL_SIGNING_SECRET_GATEWAY. */}}
{{- define "th.signingSecretKey" -}}
INTERNAL_SIGNING_SECRET_{{ . | upper | replace "-" "_" }}
{{- end -}}

{{/* The Secret's key holding a receiver's caller keys, e.g. INTERNAL_CALLER_KEYS_PARCELS. */}}
{{- define "th.callerKeysKey" -}}
INTERNAL_CALLER_KEYS_{{ . | upper | replace "-" "_" }}
{{- end -}}

{{- define "th.signingRoots" -}}
{{- $signing := .Values.secrets.internalSigning -}}
{{- toJson (dict "gateway" $signing.gateway "webhook-dispatcher" $signing.webhookDispatcher) -}}
{{- end -}}

{{/*
The signing roots and every receiver's caller keys, in the release's Secret only: the migration
hook's copy leaves them out, since its Job makes no internal call. A receiver's key for a caller
is the hex SHA-256 of `<caller's root>:<receiver>`, what internalCallerKey in
packages/config/src/internal-signing.ts derives, so a receiver that leaks its keys leaks calls
to itself only.
*/}}
{{- define "th.signingSecretData" -}}
{{- $roots := include "th.signingRoots" . | fromJson -}}
{{- range $caller, $root := $roots }}
{{ include "th.signingSecretKey" $caller }}: {{ $root | b64enc | quote }}
{{- end }}
{{- range $receiver, $callers := include "th.internalCallers" . | fromYaml }}
{{- $keys := list }}
{{- range $callers }}
{{- $keys = append $keys (printf "%s:%s" . (printf "%s:%s" (index $roots .) $receiver | sha256sum)) }}
{{- end }}
{{ include "th.callerKeysKey" $receiver }}: {{ join "," $keys | b64enc | quote }}
{{- end }}
{{- end -}}

{{/*
Each caller's signing root: required without existingSecret, as long as the services demand,
and one per caller, since a root two callers shared would let either sign as the other.
*/}}
{{- define "th.validateSigningRoots" -}}
{{- $signing := .Values.secrets.internalSigning -}}
{{- range $value := list "gateway" "webhookDispatcher" -}}
{{- $root := toString (required (printf "secrets.internalSigning.%s is required (or secrets.existingSecret with the INTERNAL_SIGNING_SECRET_* and INTERNAL_CALLER_KEYS_* keys): at least 32 characters, e.g. `openssl rand -hex 32`" $value) (index $signing $value)) -}}
{{- if lt (len $root) 32 -}}
{{- fail (printf "secrets.internalSigning.%s must be at least 32 characters, e.g. `openssl rand -hex 32`" $value) -}}
{{- end -}}
{{- end -}}
{{- if eq $signing.gateway $signing.webhookDispatcher -}}
{{- fail "secrets.internalSigning.gateway and secrets.internalSigning.webhookDispatcher must differ: a shared root would let either service sign as the other" -}}
{{- end -}}
{{- end -}}

{{/* Egress policies with nothing to reach the stores would stop every pod. */}}
{{- define "th.validateNetworkPolicy" -}}
{{- $np := .Values.networkPolicy -}}
{{- if and $np.enabled $np.egress.enabled -}}
{{- if not $np.egress.allowed -}}
{{- fail "networkPolicy.egress.allowed is required with networkPolicy.egress.enabled: the rules (to, ports) reaching your Postgres, Redis, Kafka brokers and OTLP collector" -}}
{{- end -}}
{{- if not $np.egress.dns -}}
{{- fail "networkPolicy.egress.dns is required with networkPolicy.egress.enabled: the peers answering DNS (CoreDNS / kube-dns)" -}}
{{- end -}}
{{- end -}}
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
gets every secret its config declares; the migration Job ("*") gets them all but the internal
signing keys (see migrate-job.yaml). Each entry names one key of the Secret, never the whole
Secret: a pod holds its own signing root or caller keys and no other service's.
*/}}
{{- define "th.secretEnvOf" -}}
{{- $secret := default (include "th.secretName" .root) .secret -}}
{{- $needs := list "REDIS_URL" -}}
{{- /* The gateway keeps no database: it reaches stored data through the services that own it. */ -}}
{{- if ne .service "gateway" -}}
{{- $needs = prepend $needs "DATABASE_URL" -}}
{{- end -}}
{{- if or (eq .service "gateway") (eq .service "keys") (eq .service "*") -}}
{{- $needs = append $needs "KEY_PEPPER" -}}
{{- end -}}
{{- if or (eq .service "gateway") (eq .service "*") -}}
{{- $needs = append $needs "SESSION_SECRET" -}}
{{- end -}}
{{- /* Stripe's keys reach the keys service only (and the migration Job, which reads its config). */ -}}
{{- if or (eq .service "keys") (eq .service "*") -}}
{{- $needs = concat $needs (list "STRIPE_SECRET_KEY" "STRIPE_WEBHOOK_SECRET") -}}
{{- end -}}
{{- range $needs }}
{{ include "th.secretEnv" (dict "env" . "key" . "secret" $secret) }}
{{- end }}
{{- if or (eq .service "webhook-dispatcher") (eq .service "*") }}
{{ include "th.secretEnv" (dict "env" "SECRET_KEYS" "key" "WEBHOOK_SECRET_KEY" "secret" $secret) }}
{{- end }}
{{- if has .service (list "gateway" "webhook-dispatcher") }}
{{ include "th.secretEnv" (dict "env" "INTERNAL_SIGNING_SECRET" "key" (include "th.signingSecretKey" .service) "secret" $secret) }}
{{- end }}
{{- if hasKey (include "th.internalCallers" .root | fromYaml) .service }}
{{ include "th.secretEnv" (dict "env" "INTERNAL_CALLER_KEYS" "key" (include "th.callerKeysKey" .service) "secret" $secret) }}
{{- end }}
{{- end -}}

{{/* Internal URLs of the other services, for the gateway and the dispatcher. */}}
{{- define "th.serviceUrl" -}}
{{- $spec := index .root.Values.services .service -}}
{{- printf "http://%s:%v" (include "th.name" .) $spec.port -}}
{{- end -}}

{{/*
The Kafka connection, the same in every pod and Job: env entries (variable names from
packages/config) and the Secret files they point to. Jobs that run as hooks cannot read the
release's ConfigMap, so the values are inline. Secrets are mounted as files, never put in env,
except the SASL user name, which is no secret.
*/}}
{{- define "th.kafkaDir" -}}/etc/terminal-house/kafka{{- end -}}

{{- define "th.kafkaEnv" -}}
{{- $kafka := .Values.kafka -}}
{{- $dir := include "th.kafkaDir" . -}}
- name: KAFKA_BROKERS
  value: {{ $kafka.brokers | quote }}
- name: KAFKA_TLS
  value: {{ $kafka.tls.enabled | quote }}
{{- if $kafka.tls.enabled }}
{{- if $kafka.tls.caSecret.name }}
- name: KAFKA_TLS_CA_FILE
  value: {{ printf "%s/ca/ca.crt" $dir | quote }}
{{- end }}
{{- if $kafka.tls.clientCertSecret.name }}
- name: KAFKA_TLS_CERT_FILE
  value: {{ printf "%s/client/client.crt" $dir | quote }}
- name: KAFKA_TLS_KEY_FILE
  value: {{ printf "%s/client/client.key" $dir | quote }}
{{- end }}
{{- with $kafka.tls.serverName }}
- name: KAFKA_TLS_SERVERNAME
  value: {{ . | quote }}
{{- end }}
{{- end }}
{{- if $kafka.sasl.mechanism }}
- name: KAFKA_SASL_MECHANISM
  value: {{ $kafka.sasl.mechanism | quote }}
- name: KAFKA_SASL_USERNAME
  valueFrom:
    secretKeyRef:
      name: {{ $kafka.sasl.existingSecret }}
      key: {{ $kafka.sasl.usernameKey }}
- name: KAFKA_SASL_PASSWORD_FILE
  value: {{ printf "%s/sasl/password" $dir | quote }}
{{- end }}
{{- end -}}

{{- define "th.kafkaVolumeMounts" -}}
{{- $kafka := .Values.kafka -}}
{{- $dir := include "th.kafkaDir" . -}}
{{- if and $kafka.tls.enabled $kafka.tls.caSecret.name }}
- name: kafka-ca
  mountPath: {{ printf "%s/ca" $dir }}
  readOnly: true
{{- end }}
{{- if and $kafka.tls.enabled $kafka.tls.clientCertSecret.name }}
- name: kafka-client-cert
  mountPath: {{ printf "%s/client" $dir }}
  readOnly: true
{{- end }}
{{- if $kafka.sasl.mechanism }}
- name: kafka-sasl
  mountPath: {{ printf "%s/sasl" $dir }}
  readOnly: true
{{- end }}
{{- end -}}

{{/*
Group-readable, 0440 written as 288: YAML 1.1 (Kubernetes) and 1.2 read a leading 0 differently.
The pods run as a non-root user whose group is the fsGroup.
*/}}
{{- define "th.kafkaVolumes" -}}
{{- $kafka := .Values.kafka -}}
{{- if and $kafka.tls.enabled $kafka.tls.caSecret.name }}
- name: kafka-ca
  secret:
    secretName: {{ $kafka.tls.caSecret.name }}
    defaultMode: 288
    items:
      - key: {{ $kafka.tls.caSecret.key }}
        path: ca.crt
{{- end }}
{{- if and $kafka.tls.enabled $kafka.tls.clientCertSecret.name }}
- name: kafka-client-cert
  secret:
    secretName: {{ $kafka.tls.clientCertSecret.name }}
    defaultMode: 288
    items:
      - key: {{ $kafka.tls.clientCertSecret.certKey }}
        path: client.crt
      - key: {{ $kafka.tls.clientCertSecret.keyKey }}
        path: client.key
{{- end }}
{{- if $kafka.sasl.mechanism }}
- name: kafka-sasl
  secret:
    secretName: {{ $kafka.sasl.existingSecret }}
    defaultMode: 288
    items:
      - key: {{ $kafka.sasl.passwordKey }}
        path: password
{{- end }}
{{- end -}}

{{/* Kafka settings that contradict each other fail the render, naming the value. */}}
{{- define "th.validateKafka" -}}
{{- $kafka := .Values.kafka -}}
{{- if and $kafka.sasl.mechanism (not $kafka.sasl.existingSecret) -}}
{{- fail "kafka.sasl.existingSecret is required with kafka.sasl.mechanism: the name of a Secret holding the SASL user name and password" -}}
{{- end -}}
{{- if and (not $kafka.tls.enabled) (or $kafka.tls.caSecret.name $kafka.tls.clientCertSecret.name $kafka.tls.serverName) -}}
{{- fail "kafka.tls.enabled must be true when kafka.tls.caSecret, kafka.tls.clientCertSecret or kafka.tls.serverName is set" -}}
{{- end -}}
{{- if and .Values.topics.enabled (gt (int .Values.topics.minInsyncReplicas) (int .Values.topics.replicationFactor)) -}}
{{- fail (printf "topics.minInsyncReplicas (%v) may not exceed topics.replicationFactor (%v)" .Values.topics.minInsyncReplicas .Values.topics.replicationFactor) -}}
{{- end -}}
{{- end -}}

