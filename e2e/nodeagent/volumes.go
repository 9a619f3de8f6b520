package nodeagent

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// defaultTokenSeconds is a projected token's lifetime when the Pod does not
// say (the kubelet's default).
const defaultTokenSeconds = 3600

// materialiseVolumes writes each of the Pod's volumes as a folder under dir
// and returns their paths by volume name. ConfigMaps, Secrets and the
// downward API are written once, at Pod start (the kubelet updates them
// later; this node does not); projected service account tokens are
// requested from the API server for the Pod (the API server extends the
// kube-api-access tokens to a year, so the one token lasts the Pod's life).
// A kind of volume this node cannot provide is an error.
func materialiseVolumes(ctx context.Context, cs kubernetes.Interface, pod *corev1.Pod, dir string) (map[string]string, error) {
	paths := map[string]string{}
	for _, v := range pod.Spec.Volumes {
		if v.HostPath != nil {
			paths[v.Name] = v.HostPath.Path
			continue
		}
		p := filepath.Join(dir, v.Name)
		if err := os.MkdirAll(p, 0o755); err != nil {
			return nil, err
		}
		paths[v.Name] = p
		var err error
		switch {
		case v.EmptyDir != nil:
			err = os.Chmod(p, 0o777)
		case v.ConfigMap != nil:
			err = writeConfigMap(ctx, cs, pod.Namespace, p, v.ConfigMap.Name, v.ConfigMap.Items, v.ConfigMap.Optional, mode(v.ConfigMap.DefaultMode))
		case v.Secret != nil:
			err = writeSecret(ctx, cs, pod.Namespace, p, v.Secret.SecretName, v.Secret.Items, v.Secret.Optional, mode(v.Secret.DefaultMode))
		case v.DownwardAPI != nil:
			err = writeDownward(pod, p, v.DownwardAPI.Items, mode(v.DownwardAPI.DefaultMode))
		case v.Projected != nil:
			err = writeProjected(ctx, cs, pod, p, v.Projected)
		default:
			err = fmt.Errorf("this node supports emptyDir, hostPath, configMap, secret, downwardAPI and projected volumes only")
		}
		if err != nil {
			return nil, fmt.Errorf("volume %s: %w", v.Name, err)
		}
	}
	return paths, nil
}

func mode(m *int32) os.FileMode {
	if m == nil {
		return 0o644
	}
	return os.FileMode(*m)
}

func writeConfigMap(ctx context.Context, cs kubernetes.Interface, ns, dir, name string, items []corev1.KeyToPath, optional *bool, m os.FileMode) error {
	cm, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return optionalErr(optional, fmt.Errorf("ConfigMap %s: %w", name, err))
	}
	data := map[string][]byte{}
	for k, v := range cm.Data {
		data[k] = []byte(v)
	}
	for k, v := range cm.BinaryData {
		data[k] = v
	}
	return writeKeys(dir, data, items, optional, m, "ConfigMap "+name)
}

func writeSecret(ctx context.Context, cs kubernetes.Interface, ns, dir, name string, items []corev1.KeyToPath, optional *bool, m os.FileMode) error {
	s, err := cs.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return optionalErr(optional, fmt.Errorf("secret %s: %w", name, err))
	}
	return writeKeys(dir, s.Data, items, optional, m, "Secret "+name)
}

// writeKeys writes every key, or the items' keys at their paths.
func writeKeys(dir string, data map[string][]byte, items []corev1.KeyToPath, optional *bool, m os.FileMode, what string) error {
	if len(items) == 0 {
		for k, v := range data {
			if err := writeFile(dir, k, v, m); err != nil {
				return err
			}
		}
		return nil
	}
	for _, it := range items {
		v, ok := data[it.Key]
		if !ok {
			if err := optionalErr(optional, fmt.Errorf("%s has no key %s", what, it.Key)); err != nil {
				return err
			}
			continue
		}
		if err := writeFile(dir, it.Path, v, itemMode(it.Mode, m)); err != nil {
			return err
		}
	}
	return nil
}

func itemMode(m *int32, def os.FileMode) os.FileMode {
	if m == nil {
		return def
	}
	return os.FileMode(*m)
}

func writeDownward(pod *corev1.Pod, dir string, items []corev1.DownwardAPIVolumeFile, m os.FileMode) error {
	for _, it := range items {
		if it.FieldRef == nil {
			return fmt.Errorf("downwardAPI %s: only fieldRef is supported", it.Path)
		}
		v, err := fieldValue(pod, it.FieldRef.FieldPath)
		if err != nil {
			return err
		}
		if err := writeFile(dir, it.Path, []byte(v), itemMode(it.Mode, m)); err != nil {
			return err
		}
	}
	return nil
}

func writeProjected(ctx context.Context, cs kubernetes.Interface, pod *corev1.Pod, dir string, p *corev1.ProjectedVolumeSource) error {
	m := mode(p.DefaultMode)
	for _, src := range p.Sources {
		var err error
		switch {
		case src.ServiceAccountToken != nil:
			err = writeToken(ctx, cs, pod, dir, src.ServiceAccountToken, m)
		case src.ConfigMap != nil:
			err = writeConfigMap(ctx, cs, pod.Namespace, dir, src.ConfigMap.Name, src.ConfigMap.Items, src.ConfigMap.Optional, m)
		case src.Secret != nil:
			err = writeSecret(ctx, cs, pod.Namespace, dir, src.Secret.Name, src.Secret.Items, src.Secret.Optional, m)
		case src.DownwardAPI != nil:
			err = writeDownward(pod, dir, src.DownwardAPI.Items, m)
		default:
			err = fmt.Errorf("projected sources: serviceAccountToken, configMap, secret and downwardAPI only")
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func writeToken(ctx context.Context, cs kubernetes.Interface, pod *corev1.Pod, dir string, src *corev1.ServiceAccountTokenProjection, m os.FileMode) error {
	seconds := int64(defaultTokenSeconds)
	if src.ExpirationSeconds != nil {
		seconds = *src.ExpirationSeconds
	}
	tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		ExpirationSeconds: &seconds,
		BoundObjectRef:    &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID},
	}}
	if src.Audience != "" {
		tr.Spec.Audiences = []string{src.Audience}
	}
	sa := pod.Spec.ServiceAccountName
	if sa == "" {
		sa = "default"
	}
	out, err := cs.CoreV1().ServiceAccounts(pod.Namespace).CreateToken(ctx, sa, tr, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("token for ServiceAccount %s: %w", sa, err)
	}
	return writeFile(dir, src.Path, []byte(out.Status.Token), m)
}

// writeFile writes a key's file; a path leaving dir is refused.
func writeFile(dir, rel string, data []byte, m os.FileMode) error {
	p := filepath.Join(dir, rel)
	if !strings.HasPrefix(p, dir+string(filepath.Separator)) {
		return fmt.Errorf("path %q leaves the volume", rel)
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(p, data, m); err != nil {
		return err
	}
	return os.Chmod(p, m)
}
