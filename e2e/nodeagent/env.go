package nodeagent

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// containerEnv is a container's environment as the kubelet makes it: the
// Service links, envFrom, then env (later wins), with valueFrom resolved
// (the downward API with the Pod's IP, ConfigMap and Secret keys) and
// $(VAR) references expanded. The Pod passed has its IP in status. vals
// are env's values by name, for expanding the command and args.
func containerEnv(ctx context.Context, cs kubernetes.Interface, pod *corev1.Pod, c *corev1.Container, imageEnv []string) (env []string, vals map[string]string, err error) {
	vals = map[string]string{}
	var order []string
	set := func(k, v string) {
		if _, ok := vals[k]; !ok {
			order = append(order, k)
		}
		vals[k] = v
	}
	for _, e := range imageEnv {
		if k, v, ok := strings.Cut(e, "="); ok {
			set(k, v)
		}
	}
	links, err := serviceEnv(ctx, cs, pod)
	if err != nil {
		return nil, nil, err
	}
	keys := make([]string, 0, len(links))
	for k := range links {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		set(k, links[k])
	}
	for _, from := range c.EnvFrom {
		data, err := envFromData(ctx, cs, pod.Namespace, from)
		if err != nil {
			return nil, nil, err
		}
		keys := make([]string, 0, len(data))
		for k := range data {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			set(from.Prefix+k, data[k])
		}
	}
	for _, e := range c.Env {
		if e.ValueFrom == nil {
			set(e.Name, expand(e.Value, vals))
			continue
		}
		v, ok, err := valueFrom(ctx, cs, pod, c, e.ValueFrom)
		if err != nil {
			return nil, nil, fmt.Errorf("env %s: %w", e.Name, err)
		}
		if ok {
			set(e.Name, v)
		}
	}
	env = make([]string, 0, len(order))
	for _, k := range order {
		env = append(env, k+"="+vals[k])
	}
	return env, vals, nil
}

// valueFrom resolves one env valueFrom; ok is false for a missing
// optional key.
func valueFrom(ctx context.Context, cs kubernetes.Interface, pod *corev1.Pod, c *corev1.Container, vf *corev1.EnvVarSource) (string, bool, error) {
	switch {
	case vf.FieldRef != nil:
		v, err := fieldValue(pod, vf.FieldRef.FieldPath)
		return v, err == nil, err
	case vf.ResourceFieldRef != nil:
		return resourceValue(c, vf.ResourceFieldRef)
	case vf.ConfigMapKeyRef != nil:
		r := vf.ConfigMapKeyRef
		cm, err := cs.CoreV1().ConfigMaps(pod.Namespace).Get(ctx, r.Name, metav1.GetOptions{})
		if err != nil {
			return "", false, optionalErr(r.Optional, fmt.Errorf("ConfigMap %s: %w", r.Name, err))
		}
		if v, ok := cm.Data[r.Key]; ok {
			return v, true, nil
		}
		if v, ok := cm.BinaryData[r.Key]; ok {
			return string(v), true, nil
		}
		return "", false, optionalErr(r.Optional, fmt.Errorf("ConfigMap %s has no key %s", r.Name, r.Key))
	case vf.SecretKeyRef != nil:
		r := vf.SecretKeyRef
		s, err := cs.CoreV1().Secrets(pod.Namespace).Get(ctx, r.Name, metav1.GetOptions{})
		if err != nil {
			return "", false, optionalErr(r.Optional, fmt.Errorf("secret %s: %w", r.Name, err))
		}
		if v, ok := s.Data[r.Key]; ok {
			return string(v), true, nil
		}
		return "", false, optionalErr(r.Optional, fmt.Errorf("secret %s has no key %s", r.Name, r.Key))
	}
	return "", false, fmt.Errorf("a valueFrom this node does not support")
}

func optionalErr(optional *bool, err error) error {
	if optional != nil && *optional {
		return nil
	}
	return err
}

// fieldValue is a downward API field of the Pod.
func fieldValue(pod *corev1.Pod, fieldPath string) (string, error) {
	if k, ok := subscript(fieldPath, "metadata.labels"); ok {
		return pod.Labels[k], nil
	}
	if k, ok := subscript(fieldPath, "metadata.annotations"); ok {
		return pod.Annotations[k], nil
	}
	switch fieldPath {
	case "metadata.name":
		return pod.Name, nil
	case "metadata.namespace":
		return pod.Namespace, nil
	case "metadata.uid":
		return string(pod.UID), nil
	case "metadata.labels":
		return formatMap(pod.Labels), nil
	case "metadata.annotations":
		return formatMap(pod.Annotations), nil
	case "spec.nodeName":
		return pod.Spec.NodeName, nil
	case "spec.serviceAccountName":
		return pod.Spec.ServiceAccountName, nil
	case "status.podIP":
		return pod.Status.PodIP, nil
	case "status.podIPs":
		ips := make([]string, 0, len(pod.Status.PodIPs))
		for _, ip := range pod.Status.PodIPs {
			ips = append(ips, ip.IP)
		}
		return strings.Join(ips, ","), nil
	case "status.hostIP":
		return pod.Status.HostIP, nil
	case "status.hostIPs":
		ips := make([]string, 0, len(pod.Status.HostIPs))
		for _, ip := range pod.Status.HostIPs {
			ips = append(ips, ip.IP)
		}
		return strings.Join(ips, ","), nil
	}
	return "", fmt.Errorf("downward API field %q is not supported", fieldPath)
}

// subscript splits "metadata.labels['key']".
func subscript(fieldPath, prefix string) (string, bool) {
	rest, ok := strings.CutPrefix(fieldPath, prefix+"['")
	if !ok || !strings.HasSuffix(rest, "']") {
		return "", false
	}
	return strings.TrimSuffix(rest, "']"), true
}

func formatMap(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%s=%q\n", k, m[k])
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// resourceValue is a resourceFieldRef: the container's limit or request,
// in the divisor's units (the node's capacity when no limit is set).
func resourceValue(c *corev1.Container, r *corev1.ResourceFieldSelector) (string, bool, error) {
	kind, name, ok := strings.Cut(r.Resource, ".")
	if !ok {
		return "", false, fmt.Errorf("resource %q", r.Resource)
	}
	list := c.Resources.Limits
	if kind == "requests" {
		list = c.Resources.Requests
	}
	q, ok := list[corev1.ResourceName(name)]
	if !ok {
		q = nodeCapacity()[corev1.ResourceName(name)]
	}
	div := r.Divisor
	if div.IsZero() {
		return strconv.FormatInt(q.Value(), 10), true, nil
	}
	return strconv.FormatInt((q.MilliValue()+div.MilliValue()-1)/div.MilliValue(), 10), true, nil
}

func envFromData(ctx context.Context, cs kubernetes.Interface, ns string, from corev1.EnvFromSource) (map[string]string, error) {
	switch {
	case from.ConfigMapRef != nil:
		cm, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, from.ConfigMapRef.Name, metav1.GetOptions{})
		if err != nil {
			return nil, optionalErr(from.ConfigMapRef.Optional, fmt.Errorf("envFrom ConfigMap %s: %w", from.ConfigMapRef.Name, err))
		}
		return cm.Data, nil
	case from.SecretRef != nil:
		s, err := cs.CoreV1().Secrets(ns).Get(ctx, from.SecretRef.Name, metav1.GetOptions{})
		if err != nil {
			return nil, optionalErr(from.SecretRef.Optional, fmt.Errorf("envFrom Secret %s: %w", from.SecretRef.Name, err))
		}
		m := map[string]string{}
		for k, v := range s.Data {
			m[k] = string(v)
		}
		return m, nil
	}
	return nil, nil
}

// serviceEnv is the kubelet's Service links: the kubernetes Service's
// always, the namespace's Services' unless enableServiceLinks is false.
func serviceEnv(ctx context.Context, cs kubernetes.Interface, pod *corev1.Pod) (map[string]string, error) {
	var svcs []corev1.Service
	if pod.Spec.EnableServiceLinks == nil || *pod.Spec.EnableServiceLinks {
		list, err := cs.CoreV1().Services(pod.Namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, err
		}
		svcs = list.Items
	}
	if pod.Namespace != metav1.NamespaceDefault || (pod.Spec.EnableServiceLinks != nil && !*pod.Spec.EnableServiceLinks) {
		k, err := cs.CoreV1().Services(metav1.NamespaceDefault).Get(ctx, "kubernetes", metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		svcs = append(svcs, *k)
	}
	env := map[string]string{}
	for _, s := range svcs {
		if s.Spec.ClusterIP == "" || s.Spec.ClusterIP == corev1.ClusterIPNone || len(s.Spec.Ports) == 0 {
			continue
		}
		name := strings.ToUpper(strings.ReplaceAll(s.Name, "-", "_"))
		env[name+"_SERVICE_HOST"] = s.Spec.ClusterIP
		env[name+"_SERVICE_PORT"] = strconv.Itoa(int(s.Spec.Ports[0].Port))
		for _, p := range s.Spec.Ports {
			if p.Name != "" {
				env[name+"_SERVICE_PORT_"+strings.ToUpper(strings.ReplaceAll(p.Name, "-", "_"))] = strconv.Itoa(int(p.Port))
			}
			proto := strings.ToLower(string(p.Protocol))
			if proto == "" {
				proto = "tcp"
			}
			prefix := fmt.Sprintf("%s_PORT_%d_%s", name, p.Port, strings.ToUpper(proto))
			env[prefix] = fmt.Sprintf("%s://%s:%d", proto, s.Spec.ClusterIP, p.Port)
			env[prefix+"_PROTO"] = proto
			env[prefix+"_PORT"] = strconv.Itoa(int(p.Port))
			env[prefix+"_ADDR"] = s.Spec.ClusterIP
		}
		first := s.Spec.Ports[0]
		proto := strings.ToLower(string(first.Protocol))
		if proto == "" {
			proto = "tcp"
		}
		env[name+"_PORT"] = fmt.Sprintf("%s://%s:%d", proto, s.Spec.ClusterIP, first.Port)
	}
	return env, nil
}

// expand replaces $(VAR) with earlier variables' values, $$ with $, as
// the kubelet does (an unknown $(VAR) stays as written).
func expand(s string, vals map[string]string) string {
	if !strings.Contains(s, "$") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 >= len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i++
		case '(':
			end := strings.IndexByte(s[i+2:], ')')
			if end < 0 {
				b.WriteString(s[i:])
				return b.String()
			}
			name := s[i+2 : i+2+end]
			if v, ok := vals[name]; ok {
				b.WriteString(v)
			} else {
				b.WriteString(s[i : i+3+end])
			}
			i += 2 + end
		default:
			b.WriteByte('$')
		}
	}
	return b.String()
}
