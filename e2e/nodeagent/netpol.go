package nodeagent

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os/exec"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	corelisters "k8s.io/client-go/listers/core/v1"
	networkinglisters "k8s.io/client-go/listers/networking/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	"github.com/portcullis/portcullis/e2e/cluster"
)

// policyResync is how often the chains are written again even if nothing
// changed (a rule removed by hand comes back).
const policyResync = time.Minute

// policies keeps the NetworkPolicies' chains (netpolrules.go) in step with
// the policies, the namespaces and the node's Pods: every change renders
// them all again and applies them in one iptables-restore. A Pod is added
// before its containers start, so a Pod a policy isolates never accepts
// what the policy refuses.
type policies struct {
	policies   networkinglisters.NetworkPolicyLister
	namespaces corelisters.NamespaceLister
	synced     []cache.InformerSynced
	recorder   record.EventRecorder
	kick       chan struct{}

	mu     sync.Mutex // serializes syncs; guards what follows
	pods   map[types.UID]policyPod
	last   []byte          // the last input applied
	warned map[string]bool // policy UID/generation/reason, warned of once
}

// newPolicies sets the informers up; they start with factory.
func newPolicies(factory informers.SharedInformerFactory, recorder record.EventRecorder) (*policies, error) {
	np, ns := factory.Networking().V1().NetworkPolicies(), factory.Core().V1().Namespaces()
	p := &policies{
		policies: np.Lister(), namespaces: ns.Lister(),
		synced:   []cache.InformerSynced{np.Informer().HasSynced, ns.Informer().HasSynced},
		recorder: recorder, kick: make(chan struct{}, 1),
		pods: map[types.UID]policyPod{}, warned: map[string]bool{},
	}
	h := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { p.changed() },
		UpdateFunc: func(any, any) { p.changed() },
		DeleteFunc: func(any) { p.changed() },
	}
	for _, inf := range []cache.SharedIndexInformer{np.Informer(), ns.Informer()} {
		if _, err := inf.AddEventHandler(h); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// changed asks run for a sync.
func (p *policies) changed() {
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

// run syncs on every change and every policyResync until ctx ends.
func (p *policies) run(ctx context.Context) {
	if !cache.WaitForCacheSync(ctx.Done(), p.synced...) {
		return
	}
	t := time.NewTicker(policyResync)
	defer t.Stop()
	for {
		force := false
		select {
		case <-ctx.Done():
			return
		case <-p.kick:
		case <-t.C:
			force = true
		}
		if err := p.sync(force); err != nil {
			slog.Error("network policies", "error", err)
			// Again in a second, not at the next change.
			time.AfterFunc(time.Second, p.changed)
		}
	}
}

// podUp adds a Pod (its address just given) and applies the chains
// before it returns: its containers have not started yet.
func (p *policies) podUp(pod *corev1.Pod, ip string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if !cache.WaitForCacheSync(ctx.Done(), p.synced...) {
		return errors.New("network policies: the NetworkPolicy and Namespace informers have not synced")
	}
	pp := policyPod{Namespace: pod.Namespace, Name: pod.Name, Labels: pod.Labels, IP: ip}
	for _, c := range pod.Spec.Containers {
		pp.Ports = append(pp.Ports, c.Ports...)
	}
	p.mu.Lock()
	p.pods[pod.UID] = pp
	p.mu.Unlock()
	return p.sync(false)
}

// podLabels takes a Pod's new labels.
func (p *policies) podLabels(uid types.UID, l map[string]string) {
	p.mu.Lock()
	pp, ok := p.pods[uid]
	if ok {
		pp.Labels = l
		p.pods[uid] = pp
	}
	p.mu.Unlock()
	if ok {
		p.changed()
	}
}

// podDown removes a Pod whose network is gone, before its address can
// be given again.
func (p *policies) podDown(uid types.UID) {
	p.mu.Lock()
	_, known := p.pods[uid]
	delete(p.pods, uid)
	p.mu.Unlock()
	if !known {
		return // never up (its start failed first): nothing to remove
	}
	if err := p.sync(false); err != nil {
		slog.Error("network policies", "error", err)
		p.changed()
	}
}

// sync renders the chains and applies them if they changed (or force),
// and warns, once per policy generation, of what is not enforced.
func (p *policies) sync(force bool) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	// Rendered from listers not filled yet, the chains would let in what
	// the policies refuse.
	for _, synced := range p.synced {
		if !synced() {
			return errors.New("the NetworkPolicy and Namespace informers have not synced")
		}
	}
	nps, err := p.policies.List(labels.Everything())
	if err != nil {
		return err
	}
	nss, err := p.namespaces.List(labels.Everything())
	if err != nil {
		return err
	}
	pods := make([]policyPod, 0, len(p.pods))
	for _, pp := range p.pods {
		pods = append(pods, pp)
	}
	chains, warnings := renderPolicies(nps, nss, pods)
	for _, w := range warnings {
		key := fmt.Sprintf("%s/%d/%s/%s", w.Policy.UID, w.Policy.Generation, w.Reason, w.Message)
		if p.warned[key] {
			continue
		}
		p.warned[key] = true
		slog.Warn("network policy not enforced in full", "policy", w.Policy.Namespace+"/"+w.Policy.Name, "reason", w.Reason, "message", w.Message)
		p.recorder.Event(w.Policy, corev1.EventTypeWarning, w.Reason, w.Message)
	}
	existing, err := policyChains()
	if err != nil {
		return err
	}
	in := restoreInput(chains, existing)
	if !force && bytes.Equal(in, p.last) {
		return nil
	}
	cmd := exec.Command("iptables-restore", "--noflush")
	cmd.Stdin = bytes.NewReader(in)
	if out, err := cmd.CombinedOutput(); err != nil {
		p.last = nil
		return fmt.Errorf("iptables-restore: %v: %s\n%s", err, strings.TrimSpace(string(out)), in)
	}
	p.last = in
	return nil
}

// policyChains is our filter chains that exist.
func policyChains() ([]string, error) {
	out, err := exec.Command("iptables", "-t", "filter", "-S").Output()
	if err != nil {
		return nil, fmt.Errorf("iptables -S: %w", err)
	}
	return cluster.PolicyChains(string(out)), nil
}
