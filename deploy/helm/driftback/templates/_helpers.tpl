{{/* The name label, and the objects' name: "driftback" for a release
called driftback, otherwise prefixed with the release. */}}
{{- define "driftback.name" -}}
{{- default "driftback" .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "driftback.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := include "driftback.name" . -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "driftback.selectorLabels" -}}
app.kubernetes.io/name: {{ include "driftback.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "driftback.labels" -}}
{{ include "driftback.selectorLabels" . }}
app.kubernetes.io/part-of: driftback
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{- define "driftback.serviceAccountName" -}}
{{- default (include "driftback.fullname" .) .Values.serviceAccount.name -}}
{{- end -}}

{{- define "driftback.secretName" -}}
{{- default (printf "%s-github-app" (include "driftback.fullname" .)) .Values.githubApp.existingSecret -}}
{{- end -}}

{{- define "driftback.leaseNamespace" -}}
{{- default .Release.Namespace .Values.leases.namespace -}}
{{- end -}}

{{- define "driftback.image" -}}
{{- $tag := .Values.image.tag | default .Chart.AppVersion -}}
{{- if .Values.image.digest -}}
{{- printf "%s:%s@%s" .Values.image.repository $tag .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository $tag -}}
{{- end -}}
{{- end -}}

{{/* driftback.yaml: the user's config with the key file and the listen
address the pod is built around. */}}
{{- define "driftback.config" -}}
{{- $cfg := dict -}}
{{- if kindIs "string" .Values.config -}}
{{- $cfg = fromYaml .Values.config -}}
{{- if hasKey $cfg "Error" -}}
{{- fail (printf "config is not YAML: %s" (get $cfg "Error")) -}}
{{- end -}}
{{- else -}}
{{- $cfg = deepCopy .Values.config -}}
{{- end -}}
{{- $gh := deepCopy (default dict $cfg.github) -}}
{{- $_ := unset $gh "privateKeyEnv" -}}
{{- $_ = set $gh "privateKeyFile" "/etc/driftback/key/private-key.pem" -}}
{{- $_ = unset $gh "webhookSecretFile" -}}
{{- if .Values.webhook.enabled -}}
{{- $_ = set $gh "webhookSecretFile" "/etc/driftback/key/webhook-secret" -}}
{{- end -}}
{{- $_ = set $cfg "github" $gh -}}
{{- $_ = set $cfg "listen" ":8080" -}}
{{- toYaml $cfg -}}
{{- end -}}
