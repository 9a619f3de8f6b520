{{/*
One of our gRPC servers (authserver, extprocserver): a Deployment, its
Service and the ExtensionService that lets HTTPProxies and the global
configuration use it. Call with
  (dict "root" $ "name" "authserver" "values" .Values.authserver
        "command" "authserver" "args" (list ...) "config" <map or nil>)
*/}}
{{- define "portcullis.grpcServer" -}}
{{- $root := .root -}}
{{- $v := .values -}}
{{- $fullname := include "portcullis.component" (dict "root" $root "name" .name) -}}
{{- if .config }}
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ $fullname }}
  namespace: {{ $root.Release.Namespace }}
  labels:
    {{- include "portcullis.labels" $root | nindent 4 }}
    app.kubernetes.io/component: {{ .name }}
data:
  config.yaml: |
    {{- toYaml .config | nindent 4 }}
---
{{- end }}
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ $fullname }}
  namespace: {{ $root.Release.Namespace }}
  labels:
    {{- include "portcullis.labels" $root | nindent 4 }}
    app.kubernetes.io/component: {{ .name }}
spec:
  {{- if not $v.autoscaling.enabled }}
  replicas: {{ $v.replicas }}
  {{- end }}
  selector:
    matchLabels:
      {{- include "portcullis.selectorLabels" (dict "root" $root "name" .name) | nindent 6 }}
  template:
    metadata:
      labels:
        {{- include "portcullis.selectorLabels" (dict "root" $root "name" .name) | nindent 8 }}
      annotations:
        checksum/config: {{ toYaml .config | sha256sum }}
    spec:
      serviceAccountName: {{ .serviceAccountName | default (include "portcullis.serviceAccountName" $root) }}
      terminationGracePeriodSeconds: {{ $v.terminationGracePeriodSeconds }}
      {{- include "portcullis.podSpecCommon" $root | nindent 6 }}
      {{- with include "portcullis.scheduling" $v }}{{ . | trim | nindent 6 }}{{ end }}
      containers:
        - name: {{ .name }}
          image: {{ include "portcullis.image" $root }}
          imagePullPolicy: {{ $root.Values.image.pullPolicy }}
          command: [{{ .command | quote }}]
          args:
            {{- range .args }}
            - {{ . | quote }}
            {{- end }}
            {{- range $v.extraArgs }}
            - {{ . | quote }}
            {{- end }}
          {{- with $v.env }}
          env:
            {{- toYaml . | nindent 12 }}
          {{- end }}
          ports:
            - {name: grpc, containerPort: 9443, protocol: TCP}
            - {name: metrics, containerPort: 9090, protocol: TCP}
          # The standard gRPC health service (serverkit) answers both probes.
          readinessProbe:
            grpc: {port: 9443}
            periodSeconds: 5
          livenessProbe:
            grpc: {port: 9443}
            periodSeconds: 10
            failureThreshold: 6
          securityContext:
            {{- toYaml $root.Values.securityContext | nindent 12 }}
          resources:
            {{- toYaml $v.resources | nindent 12 }}
          {{- if .config }}
          volumeMounts:
            - {name: config, mountPath: /etc/{{ .name }}, readOnly: true}
          {{- end }}
      {{- if .config }}
      volumes:
        - name: config
          configMap:
            name: {{ $fullname }}
      {{- end }}
---
apiVersion: v1
kind: Service
metadata:
  name: {{ $fullname }}
  namespace: {{ $root.Release.Namespace }}
  labels:
    {{- include "portcullis.labels" $root | nindent 4 }}
    app.kubernetes.io/component: {{ .name }}
spec:
  type: ClusterIP
  selector:
    {{- include "portcullis.selectorLabels" (dict "root" $root "name" .name) | nindent 4 }}
  ports:
    - {name: grpc, port: 9443, targetPort: grpc, protocol: TCP, appProtocol: kubernetes.io/h2c}
    - {name: metrics, port: 9090, targetPort: metrics, protocol: TCP}
---
apiVersion: projectcontour.io/v1alpha1
kind: ExtensionService
metadata:
  name: {{ $v.extensionService.name | default $fullname }}
  namespace: {{ $root.Release.Namespace }}
  labels:
    {{- include "portcullis.labels" $root | nindent 4 }}
    app.kubernetes.io/component: {{ .name }}
spec:
  protocol: h2c
  services:
    - name: {{ $fullname }}
      port: 9443
  timeoutPolicy:
    response: {{ $v.extensionService.timeout | quote }}
  {{- if kindIs "map" $v.extensionService.healthCheckPolicy }}
  healthCheckPolicy:
    {{- toYaml $v.extensionService.healthCheckPolicy | nindent 4 }}
  {{- end }}
{{- with $v.podDisruptionBudget }}
---
{{ include "portcullis.podDisruptionBudget" (dict "root" $root "name" $fullname "component" $.name "spec" .) }}
{{- end }}
{{- if $v.autoscaling.enabled }}
---
{{ include "portcullis.autoscaler" (dict "root" $root "name" $fullname "component" .name "kind" "Deployment" "spec" $v.autoscaling) }}
{{- end }}
{{- end -}}
