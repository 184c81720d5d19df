{{/* The labels every object of the release carries. */}}
{{- define "web.labels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/* What the Service selects and the Deployment's pods carry. */}}
{{- define "web.selector" -}}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}
