package nodeagent

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/portcullis/portcullis/e2e/cluster"
)

// The NetworkPolicies' Ingress rules as iptables chains, as a CNI's policy
// agent renders them (Calico's, kube-router's): every packet forwarded to
// a Pod goes through cluster.PolicyChain (from FORWARD, after kube-proxy's
// DNAT, so its destination is the Pod's address and its source the client
// Pod's: Pod-to-Pod traffic is not masqueraded). A Pod some Ingress policy
// selects gets a chain of its own, which accepts what one of those
// policies allows and drops the rest; other Pods' traffic goes on to
// FORWARD's ACCEPT. The node's own traffic (probes, hooks, the host
// reaching a ClusterIP) is the host's output, never forwarded: always
// allowed, as real network plugins allow the node's. docs/cluster.md.

// policyPod is what the rules need of a Pod.
type policyPod struct {
	Namespace, Name string
	Labels          map[string]string
	IP              string
	Ports           []corev1.ContainerPort // its containers', for named ports
}

// policyChain is one iptables chain and its rules, each the arguments
// after "-A <chain>".
type policyChain struct {
	Name  string
	Rules []string
}

// policyWarning is something of a policy the node does not enforce.
type policyWarning struct {
	Policy  *networkingv1.NetworkPolicy
	Reason  string
	Message string
}

// Warning reasons, on events of the policy.
const (
	reasonEgressNotEnforced = "EgressNotEnforced"
	reasonInvalidPolicy     = "InvalidNetworkPolicy"
)

// renderPolicies is the filter chains of the policies for the pods:
// cluster.PolicyChain first, then each isolated Pod's chain and the
// chains an ipBlock with exceptions needs. Deterministic: policies and
// pods in name order.
func renderPolicies(policies []*networkingv1.NetworkPolicy, namespaces []*corev1.Namespace, pods []policyPod) ([]policyChain, []policyWarning) {
	policies = slices.Clone(policies)
	slices.SortFunc(policies, func(x, y *networkingv1.NetworkPolicy) int {
		return strings.Compare(x.Namespace+"/"+x.Name, y.Namespace+"/"+y.Name)
	})
	pods = slices.Clone(pods)
	slices.SortFunc(pods, func(x, y policyPod) int { return strings.Compare(x.Namespace+"/"+x.Name, y.Namespace+"/"+y.Name) })
	nsLabels := map[string]labels.Set{}
	for _, ns := range namespaces {
		nsLabels[ns.Name] = ns.Labels
	}
	var warnings []policyWarning
	warn := func(np *networkingv1.NetworkPolicy, reason, format string, args ...any) {
		warnings = append(warnings, policyWarning{Policy: np, Reason: reason, Message: fmt.Sprintf(format, args...)})
	}
	// Each policy's selector once, the invalid ones (which the API server
	// refuses anyway) warned of and selecting nothing.
	var ingress []*networkingv1.NetworkPolicy
	selects := map[*networkingv1.NetworkPolicy]labels.Selector{}
	for _, np := range policies {
		if hasPolicyType(np, networkingv1.PolicyTypeEgress) {
			warn(np, reasonEgressNotEnforced, "this cluster's node enforces NetworkPolicies' Ingress rules only: the Egress rules of %s/%s are not enforced (docs/cluster.md)", np.Namespace, np.Name)
		}
		if !hasPolicyType(np, networkingv1.PolicyTypeIngress) {
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(&np.Spec.PodSelector)
		if err != nil {
			warn(np, reasonInvalidPolicy, "podSelector: %v: the policy selects no Pod", err)
			continue
		}
		selects[np] = sel
		ingress = append(ingress, np)
	}
	main := policyChain{Name: cluster.PolicyChain, Rules: []string{
		// What was allowed when it began goes on (replies included).
		"-m conntrack --ctstate RELATED,ESTABLISHED -j RETURN",
	}}
	var chains []policyChain
	for _, pod := range pods {
		if pod.IP == "" {
			continue
		}
		var mine []*networkingv1.NetworkPolicy
		for _, np := range ingress {
			if np.Namespace == pod.Namespace && selects[np].Matches(labels.Set(pod.Labels)) {
				mine = append(mine, np)
			}
		}
		if len(mine) == 0 {
			continue
		}
		name := podChainName(pod)
		main.Rules = append(main.Rules, fmt.Sprintf("-d %s/32 %s -j %s", pod.IP, comment(pod.Namespace+"/"+pod.Name), name))
		pc := policyChain{Name: name}
		var subs []policyChain
		for _, np := range mine {
			for i, rule := range np.Spec.Ingress {
				what := fmt.Sprintf("%s/%s ingress[%d]", np.Namespace, np.Name, i)
				ports := portMatches(rule.Ports, pod)
				if len(ports) == 0 {
					continue // only named ports the Pod lacks
				}
				accept := func(src string) []string {
					var rs []string
					for _, p := range ports {
						rs = append(rs, strings.Join(nonEmpty(src, p, comment(what), "-j ACCEPT"), " "))
					}
					return rs
				}
				if len(rule.From) == 0 {
					pc.Rules = append(pc.Rules, accept("")...)
					continue
				}
				var ips []string
				for j, peer := range rule.From {
					if peer.IPBlock != nil {
						cidr, except, err := ipBlock(peer.IPBlock)
						if err != nil {
							warn(np, reasonInvalidPolicy, "ingress[%d].from[%d].ipBlock: %v: it allows nothing", i, j, err)
							continue
						}
						if cidr == "" {
							continue // IPv6: no Pod of this node has such an address
						}
						if len(except) == 0 {
							pc.Rules = append(pc.Rules, accept("-s "+cidr)...)
							continue
						}
						sub := policyChain{Name: fmt.Sprintf("%s-%d", name, len(subs))}
						for _, e := range except {
							sub.Rules = append(sub.Rules, "-s "+e+" -j RETURN")
						}
						sub.Rules = append(sub.Rules, accept("")...)
						subs = append(subs, sub)
						pc.Rules = append(pc.Rules, fmt.Sprintf("-s %s %s -j %s", cidr, comment(what), sub.Name))
						continue
					}
					peerIPs, err := peerPods(peer, np.Namespace, nsLabels, pods)
					if err != nil {
						warn(np, reasonInvalidPolicy, "ingress[%d].from[%d]: %v: it allows nothing", i, j, err)
						continue
					}
					ips = append(ips, peerIPs...)
				}
				slices.Sort(ips)
				for _, ip := range slices.Compact(ips) {
					pc.Rules = append(pc.Rules, accept("-s "+ip+"/32")...)
				}
			}
		}
		pc.Rules = append(pc.Rules, comment("no NetworkPolicy of "+pod.Namespace+"/"+pod.Name+" allows it")+" -j DROP")
		chains = append(chains, pc)
		chains = append(chains, subs...)
	}
	return append([]policyChain{main}, chains...), warnings
}

// hasPolicyType: the policy's types, or when it names none, Ingress and
// (with egress rules) Egress, as the API defaults them.
func hasPolicyType(np *networkingv1.NetworkPolicy, t networkingv1.PolicyType) bool {
	if len(np.Spec.PolicyTypes) == 0 {
		return t == networkingv1.PolicyTypeIngress || len(np.Spec.Egress) > 0
	}
	return slices.Contains(np.Spec.PolicyTypes, t)
}

// peerPods is the addresses of the Pods a podSelector and/or
// namespaceSelector peer names: the policy's namespace without a
// namespaceSelector, every Pod of the namespaces without a podSelector.
func peerPods(peer networkingv1.NetworkPolicyPeer, policyNS string, nsLabels map[string]labels.Set, pods []policyPod) ([]string, error) {
	podSel, nsSel := labels.Everything(), labels.Selector(nil)
	var err error
	if peer.PodSelector != nil {
		if podSel, err = metav1.LabelSelectorAsSelector(peer.PodSelector); err != nil {
			return nil, fmt.Errorf("podSelector: %w", err)
		}
	}
	if peer.NamespaceSelector != nil {
		if nsSel, err = metav1.LabelSelectorAsSelector(peer.NamespaceSelector); err != nil {
			return nil, fmt.Errorf("namespaceSelector: %w", err)
		}
	}
	var ips []string
	for _, p := range pods {
		if p.IP == "" || !podSel.Matches(labels.Set(p.Labels)) {
			continue
		}
		if nsSel == nil {
			if p.Namespace != policyNS {
				continue
			}
		} else {
			nl, ok := nsLabels[p.Namespace]
			if !ok { // not in the informer yet: the label every namespace has
				nl = labels.Set{corev1.LabelMetadataName: p.Namespace}
			}
			if !nsSel.Matches(nl) {
				continue
			}
		}
		ips = append(ips, p.IP)
	}
	return ips, nil
}

// ipBlock is the block's CIDR and exceptions, canonical; an IPv6 block
// is "" (the node's Pods are IPv4).
func ipBlock(b *networkingv1.IPBlock) (string, []string, error) {
	_, n, err := net.ParseCIDR(b.CIDR)
	if err != nil {
		return "", nil, err
	}
	if n.IP.To4() == nil {
		return "", nil, nil
	}
	var except []string
	for _, e := range b.Except {
		_, en, err := net.ParseCIDR(e)
		if err != nil {
			return "", nil, fmt.Errorf("except: %w", err)
		}
		if en.IP.To4() != nil {
			except = append(except, en.String())
		}
	}
	return n.String(), except, nil
}

// portMatches is the iptables matches of a rule's ports on pod: "" for
// any port of any protocol (no ports); none when every port is a name
// the Pod's containers lack (the rule allows nothing on it).
func portMatches(ports []networkingv1.NetworkPolicyPort, pod policyPod) []string {
	if len(ports) == 0 {
		return []string{""}
	}
	var out []string
	for _, p := range ports {
		proto := corev1.ProtocolTCP
		if p.Protocol != nil {
			proto = *p.Protocol
		}
		m := "-p " + strings.ToLower(string(proto))
		switch {
		case p.Port == nil:
			out = append(out, m)
		case p.Port.Type == intstr.Int:
			port := strconv.Itoa(p.Port.IntValue())
			if p.EndPort != nil && int(*p.EndPort) > p.Port.IntValue() {
				port += ":" + strconv.Itoa(int(*p.EndPort))
			}
			out = append(out, m+" --dport "+port)
		default:
			for _, cp := range pod.Ports {
				cpProto := cp.Protocol
				if cpProto == "" {
					cpProto = corev1.ProtocolTCP
				}
				if cp.Name == p.Port.StrVal && cpProto == proto {
					out = append(out, fmt.Sprintf("%s --dport %d", m, cp.ContainerPort))
				}
			}
		}
	}
	return slices.Compact(out)
}

// podChainName names a Pod's chain (at most 28 characters).
func podChainName(p policyPod) string {
	h := sha256.Sum256([]byte(p.Namespace + "/" + p.Name))
	return cluster.PolicyChainPrefix + "POD-" + hex.EncodeToString(h[:])[:12]
}

// comment is an iptables comment of s, cut to the 255 bytes iptables
// takes (a longer one fails the whole iptables-restore, leaving the rules
// as they were).
func comment(s string) string {
	if len(s) > maxComment {
		s = s[:maxComment]
	}
	return `-m comment --comment "` + s + `"`
}

const maxComment = 255

func nonEmpty(s ...string) []string {
	return slices.DeleteFunc(s, func(x string) bool { return x == "" })
}

// restoreInput is the iptables-restore --noflush input that replaces our
// chains with chains and deletes the stale ones (ours that exist and are
// no longer rendered), leaving every other chain as it is.
func restoreInput(chains []policyChain, existing []string) []byte {
	var b bytes.Buffer
	b.WriteString("*filter\n")
	want := map[string]bool{}
	for _, c := range chains {
		want[c.Name] = true
		fmt.Fprintf(&b, ":%s - [0:0]\n", c.Name)
	}
	var stale []string
	for _, name := range existing {
		if !want[name] && strings.HasPrefix(name, cluster.PolicyChainPrefix) {
			stale = append(stale, name)
			// Declared, so flushed, before it is deleted.
			fmt.Fprintf(&b, ":%s - [0:0]\n", name)
		}
	}
	for _, c := range chains {
		for _, r := range c.Rules {
			fmt.Fprintf(&b, "-A %s %s\n", c.Name, r)
		}
	}
	for _, name := range stale {
		fmt.Fprintf(&b, "-X %s\n", name)
	}
	b.WriteString("COMMIT\n")
	return b.Bytes()
}
