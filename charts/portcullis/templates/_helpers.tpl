{{/* The release's full name, at most 63 characters (a DNS label). */}}
{{- define "portcullis.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* A component's name: <fullname>-<component>, at most 63 characters. */}}
{{- define "portcullis.component" -}}
{{- printf "%s-%s" (include "portcullis.fullname" .root) .name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "portcullis.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/name: {{ default .Chart.Name .Values.nameOverride }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{/* Selector labels of one component; call with (dict "root" $ "name" "envoy"). */}}
{{- define "portcullis.selectorLabels" -}}
app.kubernetes.io/name: {{ default .root.Chart.Name .root.Values.nameOverride }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .name }}
{{- end -}}

{{- define "portcullis.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "portcullis.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "portcullis.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}

{{/* The pod-level settings shared by every workload. */}}
{{- define "portcullis.podSpecCommon" -}}
{{- with .Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
securityContext:
  {{- toYaml .Values.podSecurityContext | nindent 2 }}
{{- end -}}

{{/* "true" when the control planes elect a leader (controlPlane.leaderElection.enabled; null: when more than one runs or may run, autoscaled), else "". */}}
{{- define "portcullis.leaderElection" -}}
{{- $le := .Values.controlPlane.leaderElection.enabled -}}
{{- if kindIs "bool" $le -}}
{{- if $le }}true{{ end -}}
{{- else if eq .Values.topology "separate" -}}
{{- if gt (int .Values.controlPlane.replicas) 1 }}true{{ end -}}
{{- else if or (eq .Values.envoy.kind "DaemonSet") (gt (int .Values.envoy.replicas) 1) .Values.envoy.autoscaling.enabled -}}
true
{{- end -}}
{{- end -}}

{{- define "portcullis.xdsServerSecret" -}}
{{- default (printf "%s-xds-server" (include "portcullis.fullname" .)) .Values.xds.tls.serverSecret -}}
{{- end -}}

{{- define "portcullis.xdsClientSecret" -}}
{{- default (printf "%s-xds-client" (include "portcullis.fullname" .)) .Values.xds.tls.clientSecret -}}
{{- end -}}

{{/* The xDS Service's name (topology separate). */}}
{{- define "portcullis.xdsService" -}}
{{- include "portcullis.component" (dict "root" . "name" "xds") -}}
{{- end -}}

{{/* The control plane's container; call with (dict "root" $ "xdsAddress" "..." "tls" bool). */}}
{{- define "portcullis.controlPlaneContainer" -}}
{{- $root := .root -}}
{{- $cp := $root.Values.controlPlane -}}
{{- $envoy := $root.Values.envoy -}}
- name: portcullis
  image: {{ include "portcullis.image" $root }}
  imagePullPolicy: {{ $root.Values.image.pullPolicy }}
  command: ["portcullis"]
  args:
    - serve
    - --provider=kubernetes
    - --xds-address={{ .xdsAddress }}
    - --admin-address=127.0.0.1:8002
    - --metrics-address=0.0.0.0:{{ $cp.metricsPort }}
    - --envoy-http-address=0.0.0.0:{{ $envoy.httpPort }}
    - --envoy-https-address=0.0.0.0:{{ $envoy.httpsPort }}
    - --https-redirect-port={{ $envoy.service.httpsPort }}
    - --log-level={{ $cp.logLevel }}
    - --debounce={{ $cp.debounce }}
    - --xds-client-timeout={{ $cp.xdsClientTimeout }}
    {{- if .tls }}
    - --xds-tls-cert=/xds-certs/tls.crt
    - --xds-tls-key=/xds-certs/tls.key
    - --xds-tls-client-ca=/xds-certs/ca.crt
    {{- end }}
    {{- if include "portcullis.leaderElection" $root }}
    - --leader-elect
    - --leader-elect-namespace=$(POD_NAMESPACE)
    - --leader-elect-lease-name={{ include "portcullis.fullname" $root }}
    - --leader-elect-identity=$(POD_NAME)
    - --leader-elect-lease-duration={{ $cp.leaderElection.leaseDuration }}
    - --leader-elect-renew-deadline={{ $cp.leaderElection.renewDeadline }}
    - --leader-elect-retry-period={{ $cp.leaderElection.retryPeriod }}
    {{- end }}
    {{- with $cp.rootNamespaces }}
    - --root-namespaces={{ join "," . }}
    {{- end }}
    {{- with $cp.ingressClassName }}
    - --ingress-class-name={{ . }}
    {{- end }}
    {{- with $cp.fallbackCertificate }}
    - --fallback-certificate={{ . }}
    {{- end }}
    {{- if $cp.config }}
    - --config=/etc/portcullis/config.yaml
    {{- end }}
    {{- range $cp.extraArgs }}
    - {{ . | quote }}
    {{- end }}
  ports:
    # GET /metrics alone (the admin endpoint stays on loopback).
    - {name: cp-metrics, containerPort: {{ $cp.metricsPort }}, protocol: TCP}
  {{- if .xdsPort }}
    - {name: xds, containerPort: {{ .xdsPort }}, protocol: TCP}
  # Serving xDS (over mTLS, which a probe cannot speak): the port is open.
  readinessProbe:
    tcpSocket: {port: xds}
    periodSeconds: 5
  {{- end }}
  env:
    - name: POD_NAME
      valueFrom: {fieldRef: {fieldPath: metadata.name}}
    - name: POD_NAMESPACE
      valueFrom: {fieldRef: {fieldPath: metadata.namespace}}
  securityContext:
    {{- toYaml $root.Values.securityContext | nindent 4 }}
  resources:
    {{- toYaml $cp.resources | nindent 4 }}
  {{- if or $cp.config .tls }}
  volumeMounts:
    {{- if $cp.config }}
    - {name: portcullis-config, mountPath: /etc/portcullis, readOnly: true}
    {{- end }}
    {{- if .tls }}
    - {name: xds-certs, mountPath: /xds-certs, readOnly: true}
    {{- end }}
  {{- end }}
{{- end -}}

{{/* A workload's scheduling settings (nodeSelector, tolerations, affinity) from its values (controlPlane or envoy). */}}
{{- define "portcullis.scheduling" -}}
{{- with .nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}

{{/* A component's PodDisruptionBudget; call with (dict "root" $ "name" <object name> "component" "envoy" "spec" <values' podDisruptionBudget>). */}}
{{- define "portcullis.podDisruptionBudget" -}}
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: {{ .name }}
  namespace: {{ .root.Release.Namespace }}
  labels:
    {{- include "portcullis.labels" .root | nindent 4 }}
    app.kubernetes.io/component: {{ .component }}
spec:
  {{- toYaml .spec | nindent 2 }}
  selector:
    matchLabels:
      {{- include "portcullis.selectorLabels" (dict "root" .root "name" .component) | nindent 6 }}
{{- end -}}

{{/* A workload's HorizontalPodAutoscaler on CPU; call with (dict "root" $ "name" <workload name> "component" <component> "kind" "Deployment" "spec" <values' autoscaling>). */}}
{{- define "portcullis.autoscaler" -}}
{{- if gt (int .spec.minReplicas) (int .spec.maxReplicas) }}
{{- fail (printf "%s autoscaling: minReplicas (%d) is more than maxReplicas (%d)" .component (int .spec.minReplicas) (int .spec.maxReplicas)) }}
{{- end }}
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: {{ .name }}
  namespace: {{ .root.Release.Namespace }}
  labels:
    {{- include "portcullis.labels" .root | nindent 4 }}
    app.kubernetes.io/component: {{ .component }}
spec:
  scaleTargetRef:
    apiVersion: apps/v1
    kind: {{ .kind }}
    name: {{ .name }}
  minReplicas: {{ .spec.minReplicas }}
  maxReplicas: {{ .spec.maxReplicas }}
  metrics:
    - type: Resource
      resource:
        name: cpu
        target: {type: Utilization, averageUtilization: {{ .spec.targetCPUUtilizationPercentage }}}
{{- end -}}

{{/* The control plane's pod volumes, which its container mounts; call with (dict "root" $ "tls" bool). */}}
{{- define "portcullis.controlPlaneVolumes" -}}
{{- if .tls }}
- name: xds-certs
  secret:
    secretName: {{ include "portcullis.xdsServerSecret" .root }}
{{- end }}
{{- if .root.Values.controlPlane.config }}
- name: portcullis-config
  configMap:
    name: {{ include "portcullis.fullname" .root }}
{{- end }}
{{- end -}}
