package nodeagent

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
)

// The cluster runs no DNS server. In its place each Pod's /etc/hosts (a
// file of the Pod's, bind-mounted in its containers) names the Pod and
// every Service's ClusterIP, as cluster DNS would (name.namespace.svc.
// cluster.local, name.namespace.svc, name.namespace, and the bare name in
// the Pod's own namespace), rewritten whenever a Service changes. Enough
// for clients that resolve Service names, like Envoy reaching the chart's
// xDS Service; no SRV records, no headless Services' Pods.

// hostsFile is the Pod's /etc/hosts.
func (p *podRuntime) hostsFile() string { return filepath.Join(p.dir, "hosts") }

// hostsContent is the /etc/hosts of pod.
func hostsContent(pod *corev1.Pod, ip string, services []*corev1.Service) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n%s\t%s\n", ip, hostname(pod))
	services = slices.Clone(services)
	slices.SortFunc(services, func(x, y *corev1.Service) int {
		if c := bytes.Compare([]byte(x.Namespace), []byte(y.Namespace)); c != 0 {
			return c
		}
		return bytes.Compare([]byte(x.Name), []byte(y.Name))
	})
	for _, s := range services {
		ip := s.Spec.ClusterIP
		if ip == "" || ip == corev1.ClusterIPNone {
			continue
		}
		fmt.Fprintf(&b, "%s\t%s.%s.svc.cluster.local %[2]s.%[3]s.svc %[2]s.%[3]s", ip, s.Name, s.Namespace)
		if s.Namespace == pod.Namespace {
			fmt.Fprintf(&b, " %s", s.Name)
		}
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// writeHosts writes the Pod's /etc/hosts in place (the containers' bind
// mounts keep the file's inode): the new content over the old, then cut to
// its length, so a reader never finds it empty. A stopping Pod's is left
// alone (its folder is being removed).
func (a *Agent) writeHosts(p *podRuntime) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopping {
		return nil
	}
	var services []*corev1.Service
	if a.services != nil {
		var err error
		if services, err = a.services.List(labels.Everything()); err != nil {
			return err
		}
	}
	want := hostsContent(p.pod, p.pod.Status.PodIP, services)
	if have, err := os.ReadFile(p.hostsFile()); err == nil && bytes.Equal(have, want) {
		return nil
	}
	f, err := os.OpenFile(p.hostsFile(), os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.WriteAt(want, 0); err != nil {
		f.Close()
		return err
	}
	if err := f.Truncate(int64(len(want))); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// watchServices rewrites every Pod's /etc/hosts when a Service changes.
func (a *Agent) watchServices(inf cache.SharedIndexInformer, lister corelisters.ServiceLister) error {
	a.services = lister
	refresh := func(any) {
		a.mu.Lock()
		pods := make([]*podRuntime, 0, len(a.pods))
		for _, p := range a.pods {
			pods = append(pods, p)
		}
		a.mu.Unlock()
		for _, p := range pods {
			if err := a.writeHosts(p); err != nil {
				fmt.Fprintf(os.Stderr, "pod %s/%s: /etc/hosts: %v\n", p.pod.Namespace, p.pod.Name, err)
			}
		}
	}
	_, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    refresh,
		UpdateFunc: func(_, o any) { refresh(o) },
		DeleteFunc: refresh,
	})
	return err
}
