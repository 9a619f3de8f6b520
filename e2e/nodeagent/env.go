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
	l := &envList{vals: map[string]string{}}
	for _, e := range imageEnv {
		if k, v, ok := strings.Cut(e, "="); ok {
			l.set(k, v)
		}
	}
	links, err := serviceEnv(ctx, cs, pod)
	if err != nil {
		return nil, nil, err
	}
	l.setSorted("", links)
	for _, from := range c.EnvFrom {
		data, err := envFromData(ctx, cs, pod.Namespace, from)
		if err != nil {
			return nil, nil, err
		}
		l.setSorted(from.Prefix, data)
	}
	for _, e := range c.Env {
		if e.ValueFrom == nil {
			l.set(e.Name, expand(e.Value, l.vals))
			continue
		}
		v, ok, err := valueFrom(ctx, cs, pod, c, e.ValueFrom)
		if err != nil {
			return nil, nil, fmt.Errorf("env %s: %w", e.Name, err)
		}
		if ok {
			l.set(e.Name, v)
		}
	}
	return l.environ(), l.vals, nil
}

// envList is a container's environment as it is built: a later value of a
// name replaces the earlier one in its first place, as the kubelet does.
type envList struct {
	vals  map[string]string
	order []string
}

func (l *envList) set(k, v string) {
	if _, ok := l.vals[k]; !ok {
		l.order = append(l.order, k)
	}
	l.vals[k] = v
}

// setSorted sets each of m, prefixed, in the order of its keys.
func (l *envList) setSorted(prefix string, m map[string]string) {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		l.set(prefix+k, m[k])
	}
}

// environ is the list as NAME=value strings.
func (l *envList) environ() []string {
	env := make([]string, 0, len(l.order))
	for _, k := range l.order {
		env = append(env, k+"="+l.vals[k])
	}
	return env
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
	if get, ok := downwardFields[fieldPath]; ok {
		return get(pod), nil
	}
	return "", fmt.Errorf("downward API field %q is not supported", fieldPath)
}

// downwardFields are the downward API's plain field paths.
var downwardFields = map[string]func(*corev1.Pod) string{
	"metadata.name":           func(p *corev1.Pod) string { return p.Name },
	"metadata.namespace":      func(p *corev1.Pod) string { return p.Namespace },
	"metadata.uid":            func(p *corev1.Pod) string { return string(p.UID) },
	"metadata.labels":         func(p *corev1.Pod) string { return formatMap(p.Labels) },
	"metadata.annotations":    func(p *corev1.Pod) string { return formatMap(p.Annotations) },
	"spec.nodeName":           func(p *corev1.Pod) string { return p.Spec.NodeName },
	"spec.serviceAccountName": func(p *corev1.Pod) string { return p.Spec.ServiceAccountName },
	"status.podIP":            func(p *corev1.Pod) string { return p.Status.PodIP },
	"status.podIPs":           func(p *corev1.Pod) string { return joinPodIPs(p.Status.PodIPs) },
	"status.hostIP":           func(p *corev1.Pod) string { return p.Status.HostIP },
	"status.hostIPs": func(p *corev1.Pod) string {
		ips := make([]corev1.PodIP, 0, len(p.Status.HostIPs))
		for _, ip := range p.Status.HostIPs {
			ips = append(ips, corev1.PodIP(ip))
		}
		return joinPodIPs(ips)
	},
}

// joinPodIPs is the addresses, comma-separated.
func joinPodIPs(in []corev1.PodIP) string {
	ips := make([]string, 0, len(in))
	for _, ip := range in {
		ips = append(ips, ip.IP)
	}
	return strings.Join(ips, ",")
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
		if s.Spec.ClusterIP != "" && s.Spec.ClusterIP != corev1.ClusterIPNone && len(s.Spec.Ports) > 0 {
			addServiceEnv(env, s)
		}
	}
	return env, nil
}

// addServiceEnv adds the kubelet's variables of one Service with a
// cluster IP and ports.
func addServiceEnv(env map[string]string, s corev1.Service) {
	name := envName(s.Name)
	ip := s.Spec.ClusterIP
	env[name+"_SERVICE_HOST"] = ip
	env[name+"_SERVICE_PORT"] = strconv.Itoa(int(s.Spec.Ports[0].Port))
	for _, p := range s.Spec.Ports {
		if p.Name != "" {
			env[name+"_SERVICE_PORT_"+envName(p.Name)] = strconv.Itoa(int(p.Port))
		}
		proto := portProtocol(p)
		prefix := fmt.Sprintf("%s_PORT_%d_%s", name, p.Port, strings.ToUpper(proto))
		env[prefix] = fmt.Sprintf("%s://%s:%d", proto, ip, p.Port)
		env[prefix+"_PROTO"] = proto
		env[prefix+"_PORT"] = strconv.Itoa(int(p.Port))
		env[prefix+"_ADDR"] = ip
	}
	first := s.Spec.Ports[0]
	env[name+"_PORT"] = fmt.Sprintf("%s://%s:%d", portProtocol(first), ip, first.Port)
}

// envName is a name as a variable name: upper case, _ for -.
func envName(n string) string { return strings.ToUpper(strings.ReplaceAll(n, "-", "_")) }

// portProtocol is the port's protocol in lower case, tcp when unset.
func portProtocol(p corev1.ServicePort) string {
	if p.Protocol == "" {
		return "tcp"
	}
	return strings.ToLower(string(p.Protocol))
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
