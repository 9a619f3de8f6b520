{{/*
One of our gRPC servers (authserver, extprocserver): a Deployment, its
Service and the ExtensionService that lets HTTPProxies and the global
configuration use it, and with <server>.tls.enabled its TLS Secret. Call with
  (dict "root" $ "name" "authserver" "values" .Values.authserver
        "command" "authserver" "args" (list ...) "config" <map or nil>
        "mounts" (list (dict "name" ... "mountPath" ... "volume" <volume source>))
        "checksums" (dict "checksum/<name>" <sha256>))
*/}}
{{- define "portcullis.grpcServer" -}}
{{- $root := .root -}}
{{- $v := .values -}}
{{- $fullname := include "portcullis.component" (dict "root" $root "name" .name) -}}
{{- $ns := $root.Release.Namespace -}}
{{- $mounts := .mounts | default list -}}
{{- $args := .args -}}
{{- /* TLS between Envoy and the server (<server>.tls): the server serves
the certificate of a Secret, the ExtensionService is h2 and verifies it
against the Secret's ca.crt for the Service's name. */ -}}
{{- $tls := dig "tls" "enabled" false $v -}}
{{- $tlsSecret := "" -}}
{{- $tlsData := dict -}}
{{- $tlsChecksum := "" -}}
{{- $subjectName := printf "%s.%s.svc" $fullname $ns -}}
{{- if $tls }}
{{- $tlsSecret = $v.tls.secret | default (printf "%s-tls" $fullname) -}}
{{- $existing := lookup "v1" "Secret" $ns $tlsSecret -}}
{{- if $existing }}
{{- /* Made by this release: kept as it is (new certificates on every
upgrade would roll the pods for nothing). Anyone else's: left alone. */ -}}
{{- if and $v.tls.generate (eq (dig "metadata" "annotations" "meta.helm.sh/release-name" "" $existing) $root.Release.Name) }}
{{- $tlsData = $existing.data -}}
{{- end }}
{{- $tlsChecksum = $existing.data | toYaml | sha256sum -}}
{{- else if $v.tls.generate }}
{{- $days := int $v.tls.generateDays -}}
{{- $ca := genCA (printf "%s-ca" $fullname) $days -}}
{{- $cert := genSignedCert $subjectName nil (list $fullname (printf "%s.%s" $fullname $ns) $subjectName) $days $ca -}}
{{- $tlsData = dict "tls.crt" ($cert.Cert | b64enc) "tls.key" ($cert.Key | b64enc) "ca.crt" ($ca.Cert | b64enc) -}}
{{- $tlsChecksum = $tlsData | toYaml | sha256sum -}}
{{- end }}
{{- $args = concat $args (list (printf "--tls-cert-path=/etc/%s-tls/tls.crt" .name) (printf "--tls-key-path=/etc/%s-tls/tls.key" .name)) -}}
{{- $mounts = append $mounts (dict "name" "tls" "mountPath" (printf "/etc/%s-tls" .name) "volume" (dict "secret" (dict "secretName" $tlsSecret))) -}}
{{- end }}
{{- if .config }}
{{- $mounts = prepend $mounts (dict "name" "config" "mountPath" (printf "/etc/%s" .name) "volume" (dict "configMap" (dict "name" $fullname))) -}}
{{- end }}
{{- if $tlsData }}
# The server's certificate for its Service's names, and the CA that signed
# it (made by the chart: <server>.tls.generate).
apiVersion: v1
kind: Secret
metadata:
  name: {{ $tlsSecret }}
  namespace: {{ $ns }}
  labels:
    {{- include "portcullis.labels" $root | nindent 4 }}
    app.kubernetes.io/component: {{ .name }}
type: Opaque
data:
  {{- $tlsData | toYaml | nindent 2 }}
---
{{- end }}
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
        {{- with $tlsChecksum }}
        # The server reads its certificate at start: a new one rolls the pods.
        checksum/tls: {{ . }}
        {{- end }}
        {{- range $k, $sum := .checksums }}
        {{ $k }}: {{ $sum }}
        {{- end }}
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
            {{- range $args }}
            - {{ . | quote }}
            {{- end }}
            {{- range $v.extraArgs }}
            - {{ . | quote }}
            {{- end }}
          {{- $otlp := include "portcullis.otlpEnv" $root }}
          {{- if or $v.env $otlp }}
          env:
            {{- with $otlp }}{{ . | nindent 12 }}{{ end }}
            {{- with $v.env }}{{ toYaml . | nindent 12 }}{{ end }}
          {{- end }}
          ports:
            - {name: grpc, containerPort: 9443, protocol: TCP}
            - {name: metrics, containerPort: 9090, protocol: TCP}
          {{- if $tls }}
          # The kubelet's gRPC probes speak plaintext only: with TLS, the
          # server's /healthz on the metrics port (serverkit: ok while it
          # serves, 503 once it stops) answers both probes.
          readinessProbe:
            httpGet: {path: /healthz, port: metrics}
            periodSeconds: 5
          livenessProbe:
            httpGet: {path: /healthz, port: metrics}
            periodSeconds: 10
            failureThreshold: 6
          {{- else }}
          # The standard gRPC health service (serverkit) answers both probes.
          readinessProbe:
            grpc: {port: 9443}
            periodSeconds: 5
          livenessProbe:
            grpc: {port: 9443}
            periodSeconds: 10
            failureThreshold: 6
          {{- end }}
          securityContext:
            {{- toYaml $root.Values.securityContext | nindent 12 }}
          resources:
            {{- toYaml $v.resources | nindent 12 }}
          {{- if or $mounts $v.extraVolumeMounts }}
          volumeMounts:
            {{- range $mounts }}
            - {name: {{ .name }}, mountPath: {{ .mountPath }}, readOnly: true}
            {{- end }}
            {{- with $v.extraVolumeMounts }}
            {{- toYaml . | nindent 12 }}
            {{- end }}
          {{- end }}
      {{- if or $mounts $v.extraVolumes }}
      volumes:
        {{- range $mounts }}
        - name: {{ .name }}
          {{- toYaml .volume | nindent 10 }}
        {{- end }}
        {{- with $v.extraVolumes }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
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
    {{- if $tls }}
    - {name: grpc, port: 9443, targetPort: grpc, protocol: TCP}
    {{- else }}
    - {name: grpc, port: 9443, targetPort: grpc, protocol: TCP, appProtocol: kubernetes.io/h2c}
    {{- end }}
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
  {{- if $tls }}
  # TLS, the server's certificate verified for the Service's name.
  protocol: h2
  validation:
    caSecret: {{ $v.tls.caSecret | default $tlsSecret }}
    subjectName: {{ $subjectName }}
  {{- else }}
  protocol: h2c
  {{- end }}
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
