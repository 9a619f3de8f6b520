package nodeagent

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// The pods of the table: a server (ports http 8080/TCP, dns 53/UDP,
// metrics 9090) and clients in two namespaces.
var policyTestPods = []policyPod{
	{Namespace: "app", Name: "server", Labels: map[string]string{"app": "server"}, IP: "10.213.0.10",
		Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}, {Name: "dns", ContainerPort: 53, Protocol: corev1.ProtocolUDP}, {Name: "metrics", ContainerPort: 9090}}},
	{Namespace: "app", Name: "client", Labels: map[string]string{"role": "client"}, IP: "10.213.0.11"},
	{Namespace: "app", Name: "other", Labels: map[string]string{"role": "other"}, IP: "10.213.0.12"},
	{Namespace: "app", Name: "pending", Labels: map[string]string{"role": "client"}}, // no address yet
	{Namespace: "team", Name: "client", Labels: map[string]string{"role": "client"}, IP: "10.213.0.21"},
	{Namespace: "team", Name: "other", Labels: map[string]string{"role": "other"}, IP: "10.213.0.22"},
	{Namespace: "monitoring", Name: "prometheus", Labels: map[string]string{"app": "prometheus"}, IP: "10.213.0.31"},
}

var policyTestNamespaces = []*corev1.Namespace{
	{ObjectMeta: metav1.ObjectMeta{Name: "app", Labels: map[string]string{corev1.LabelMetadataName: "app"}}},
	{ObjectMeta: metav1.ObjectMeta{Name: "team", Labels: map[string]string{corev1.LabelMetadataName: "team", "trusted": "yes"}}},
	{ObjectMeta: metav1.ObjectMeta{Name: "monitoring", Labels: map[string]string{corev1.LabelMetadataName: "monitoring", "trusted": "yes"}}},
}

func TestRenderPolicies(t *testing.T) {
	server := podChainName(policyPod{Namespace: "app", Name: "server"})
	client := podChainName(policyPod{Namespace: "app", Name: "client"})
	tcp, udp := ptr.To(corev1.ProtocolTCP), ptr.To(corev1.ProtocolUDP)
	num := func(p int) *intstr.IntOrString { v := intstr.FromInt32(int32(p)); return &v }
	named := func(n string) *intstr.IntOrString { v := intstr.FromString(n); return &v }
	sel := func(kv ...string) *metav1.LabelSelector {
		s := &metav1.LabelSelector{MatchLabels: map[string]string{}}
		for i := 0; i+1 < len(kv); i += 2 {
			s.MatchLabels[kv[i]] = kv[i+1]
		}
		return s
	}
	policy := func(ns, name string, podSelector *metav1.LabelSelector, types []networkingv1.PolicyType, ingress ...networkingv1.NetworkPolicyIngressRule) *networkingv1.NetworkPolicy {
		return &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: networkingv1.NetworkPolicySpec{PodSelector: *podSelector, PolicyTypes: types, Ingress: ingress}}
	}
	ingressOnly := []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}
	established := "-A PCL-INGRESS -m conntrack --ctstate RELATED,ESTABLISHED -j RETURN"
	jump := func(ip, pod, chain string) string {
		return fmt.Sprintf(`-A PCL-INGRESS -d %s/32 -m comment --comment "%s" -j %s`, ip, pod, chain)
	}
	serverJump := jump("10.213.0.10", "app/server", server)
	drop := func(chain, pod string) string {
		return fmt.Sprintf(`-A %s -m comment --comment "no NetworkPolicy of %s allows it" -j DROP`, chain, pod)
	}
	accept := func(chain, match, what string) string {
		if match != "" {
			match += " "
		}
		return fmt.Sprintf(`-A %s %s-m comment --comment "%s" -j ACCEPT`, chain, match, what)
	}
	egress := []networkingv1.NetworkPolicyEgressRule{{}}

	tests := []struct {
		name     string
		policies []*networkingv1.NetworkPolicy
		want     []string // "-A <chain> <rule>"
		warnings []string // "<policy> <reason>"
	}{
		{name: "no policy: no Pod isolated", want: []string{established}},
		{name: "the task's: role=client on 8080 only",
			policies: []*networkingv1.NetworkPolicy{policy("app", "server", sel("app", "server"), ingressOnly, networkingv1.NetworkPolicyIngressRule{
				From:  []networkingv1.NetworkPolicyPeer{{PodSelector: sel("role", "client")}},
				Ports: []networkingv1.NetworkPolicyPort{{Port: num(8080)}}})},
			// Not team/client (another namespace), not the pending client (no address).
			want: []string{established, serverJump,
				accept(server, "-s 10.213.0.11/32 -p tcp --dport 8080", "app/server ingress[0]"),
				drop(server, "app/server")}},
		{name: "a policy of another namespace selects nothing here",
			policies: []*networkingv1.NetworkPolicy{policy("team", "all", sel(), ingressOnly)},
			want: []string{established,
				jump("10.213.0.21", "team/client", podChainName(policyPod{Namespace: "team", Name: "client"})),
				jump("10.213.0.22", "team/other", podChainName(policyPod{Namespace: "team", Name: "other"})),
				drop(podChainName(policyPod{Namespace: "team", Name: "client"}), "team/client"),
				drop(podChainName(policyPod{Namespace: "team", Name: "other"}), "team/other")}},
		{name: "no ingress rule: every ingress denied",
			policies: []*networkingv1.NetworkPolicy{policy("app", "deny", sel("app", "server"), ingressOnly)},
			want:     []string{established, serverJump, drop(server, "app/server")}},
		{name: "an empty rule: from anywhere to any port",
			policies: []*networkingv1.NetworkPolicy{policy("app", "allow", sel("app", "server"), ingressOnly, networkingv1.NetworkPolicyIngressRule{})},
			want:     []string{established, serverJump, accept(server, "", "app/allow ingress[0]"), drop(server, "app/server")}},
		{name: "namespaceSelector alone: every Pod of the trusted namespaces",
			policies: []*networkingv1.NetworkPolicy{policy("app", "ns", sel("app", "server"), ingressOnly, networkingv1.NetworkPolicyIngressRule{
				From: []networkingv1.NetworkPolicyPeer{{NamespaceSelector: sel("trusted", "yes")}}})},
			want: []string{established, serverJump,
				accept(server, "-s 10.213.0.21/32", "app/ns ingress[0]"),
				accept(server, "-s 10.213.0.22/32", "app/ns ingress[0]"),
				accept(server, "-s 10.213.0.31/32", "app/ns ingress[0]"),
				drop(server, "app/server")}},
		{name: "namespaceSelector and podSelector in one peer: both; in two peers: either",
			policies: []*networkingv1.NetworkPolicy{
				policy("app", "and", sel("app", "server"), ingressOnly, networkingv1.NetworkPolicyIngressRule{
					From: []networkingv1.NetworkPolicyPeer{{NamespaceSelector: sel("trusted", "yes"), PodSelector: sel("role", "client")}}}),
				policy("app", "or", sel("app", "server"), ingressOnly, networkingv1.NetworkPolicyIngressRule{
					From:  []networkingv1.NetworkPolicyPeer{{NamespaceSelector: sel(corev1.LabelMetadataName, "monitoring")}, {PodSelector: sel("role", "client")}},
					Ports: []networkingv1.NetworkPolicyPort{{Port: named("metrics")}}}),
			},
			want: []string{established, serverJump,
				accept(server, "-s 10.213.0.21/32", "app/and ingress[0]"),
				accept(server, "-s 10.213.0.11/32 -p tcp --dport 9090", "app/or ingress[0]"),
				accept(server, "-s 10.213.0.31/32 -p tcp --dport 9090", "app/or ingress[0]"),
				drop(server, "app/server")}},
		{name: "an empty namespaceSelector: every namespace; an empty podSelector: the policy's",
			policies: []*networkingv1.NetworkPolicy{policy("app", "all", sel("app", "server"), ingressOnly,
				networkingv1.NetworkPolicyIngressRule{From: []networkingv1.NetworkPolicyPeer{{NamespaceSelector: sel(), PodSelector: sel("role", "client")}}},
				networkingv1.NetworkPolicyIngressRule{From: []networkingv1.NetworkPolicyPeer{{PodSelector: sel()}}, Ports: []networkingv1.NetworkPolicyPort{{Port: num(53), Protocol: udp}}})},
			want: []string{established, serverJump,
				accept(server, "-s 10.213.0.11/32", "app/all ingress[0]"),
				accept(server, "-s 10.213.0.21/32", "app/all ingress[0]"),
				accept(server, "-s 10.213.0.10/32 -p udp --dport 53", "app/all ingress[1]"),
				accept(server, "-s 10.213.0.11/32 -p udp --dport 53", "app/all ingress[1]"),
				accept(server, "-s 10.213.0.12/32 -p udp --dport 53", "app/all ingress[1]"),
				drop(server, "app/server")}},
		{name: "ipBlock: a CIDR, one with exceptions (a chain of its own), an IPv6 one (no IPv4 source)",
			policies: []*networkingv1.NetworkPolicy{policy("app", "cidr", sel("app", "server"), ingressOnly, networkingv1.NetworkPolicyIngressRule{
				From: []networkingv1.NetworkPolicyPeer{
					{IPBlock: &networkingv1.IPBlock{CIDR: "192.168.7.0/24"}},
					{IPBlock: &networkingv1.IPBlock{CIDR: "10.213.0.5/24", Except: []string{"10.213.0.16/28", "10.213.0.31/32"}}},
					{IPBlock: &networkingv1.IPBlock{CIDR: "fd00::/64"}},
				},
				Ports: []networkingv1.NetworkPolicyPort{{Port: named("http")}, {Port: num(9000), EndPort: ptr.To[int32](9100)}}})},
			want: []string{established, serverJump,
				accept(server, "-s 192.168.7.0/24 -p tcp --dport 8080", "app/cidr ingress[0]"),
				accept(server, "-s 192.168.7.0/24 -p tcp --dport 9000:9100", "app/cidr ingress[0]"),
				`-A ` + server + ` -s 10.213.0.0/24 -m comment --comment "app/cidr ingress[0]" -j ` + server + `-0`,
				drop(server, "app/server"),
				"-A " + server + "-0 -s 10.213.0.16/28 -j RETURN",
				"-A " + server + "-0 -s 10.213.0.31/32 -j RETURN",
				accept(server+"-0", "-p tcp --dport 8080", "app/cidr ingress[0]"),
				accept(server+"-0", "-p tcp --dport 9000:9100", "app/cidr ingress[0]")}},
		{name: "ports: named by protocol, a protocol alone, a name the Pod lacks (the rule allows nothing)",
			policies: []*networkingv1.NetworkPolicy{policy("app", "ports", sel("app", "server"), ingressOnly,
				networkingv1.NetworkPolicyIngressRule{Ports: []networkingv1.NetworkPolicyPort{
					{Port: named("dns"), Protocol: udp}, {Port: named("dns"), Protocol: tcp}, {Protocol: udp}}},
				networkingv1.NetworkPolicyIngressRule{Ports: []networkingv1.NetworkPolicyPort{{Port: named("grpc")}}})},
			want: []string{established, serverJump,
				accept(server, "-p udp --dport 53", "app/ports ingress[0]"),
				accept(server, "-p udp", "app/ports ingress[0]"),
				drop(server, "app/server")}},
		{name: "two policies select the Pod: the union of what they allow",
			policies: []*networkingv1.NetworkPolicy{
				policy("app", "a", sel("app", "server"), ingressOnly, networkingv1.NetworkPolicyIngressRule{
					From: []networkingv1.NetworkPolicyPeer{{PodSelector: sel("role", "client")}}, Ports: []networkingv1.NetworkPolicyPort{{Port: num(8080)}}}),
				policy("app", "b", sel(), ingressOnly, networkingv1.NetworkPolicyIngressRule{
					From: []networkingv1.NetworkPolicyPeer{{PodSelector: sel("role", "other")}}}),
			},
			want: []string{established,
				jump("10.213.0.11", "app/client", client),
				jump("10.213.0.12", "app/other", podChainName(policyPod{Namespace: "app", Name: "other"})),
				serverJump,
				accept(client, "-s 10.213.0.12/32", "app/b ingress[0]"),
				drop(client, "app/client"),
				accept(podChainName(policyPod{Namespace: "app", Name: "other"}), "-s 10.213.0.12/32", "app/b ingress[0]"),
				drop(podChainName(policyPod{Namespace: "app", Name: "other"}), "app/other"),
				accept(server, "-s 10.213.0.11/32 -p tcp --dport 8080", "app/a ingress[0]"),
				accept(server, "-s 10.213.0.12/32", "app/b ingress[0]"),
				drop(server, "app/server")}},
		{name: "Egress only: no Pod isolated for ingress, a warning",
			policies: []*networkingv1.NetworkPolicy{{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "out"},
				Spec: networkingv1.NetworkPolicySpec{PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeEgress}, Egress: egress}}},
			want:     []string{established},
			warnings: []string{"app/out " + reasonEgressNotEnforced}},
		{name: "no policyTypes with egress rules: Ingress enforced (none allowed), Egress warned",
			policies: []*networkingv1.NetworkPolicy{{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "both"},
				Spec: networkingv1.NetworkPolicySpec{PodSelector: *sel("app", "server"), Egress: egress}}},
			want:     []string{established, serverJump, drop(server, "app/server")},
			warnings: []string{"app/both " + reasonEgressNotEnforced}},
		{name: "invalid selectors: the policy selects nothing, the peer allows nothing",
			policies: []*networkingv1.NetworkPolicy{
				policy("app", "bad-pods", &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "x", Operator: "Bogus"}}}, ingressOnly),
				policy("app", "bad-peer", sel("app", "server"), ingressOnly, networkingv1.NetworkPolicyIngressRule{
					From: []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "x", Operator: "Bogus"}}}},
						{IPBlock: &networkingv1.IPBlock{CIDR: "not-a-cidr"}}}}),
			},
			want: []string{established, serverJump, drop(server, "app/server")},
			// The policies' own selectors first, then their rules'.
			warnings: []string{"app/bad-pods " + reasonInvalidPolicy, "app/bad-peer " + reasonInvalidPolicy, "app/bad-peer " + reasonInvalidPolicy}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			chains, warnings := renderPolicies(tc.policies, policyTestNamespaces, policyTestPods)
			var got []string
			for _, c := range chains {
				for _, r := range c.Rules {
					got = append(got, "-A "+c.Name+" "+r)
				}
			}
			if !slices.Equal(tc.want, got) {
				t.Errorf("rules:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
			var gotWarnings []string
			for _, w := range warnings {
				gotWarnings = append(gotWarnings, w.Policy.Namespace+"/"+w.Policy.Name+" "+w.Reason)
				if w.Message == "" {
					t.Errorf("warning %s of %s without a message", w.Reason, w.Policy.Name)
				}
			}
			if !slices.Equal(tc.warnings, gotWarnings) {
				t.Errorf("warnings %q, want %q", gotWarnings, tc.warnings)
			}
			for _, c := range chains {
				if len(c.Name) > 28 {
					t.Errorf("chain name %s: longer than iptables' 28 characters", c.Name)
				}
			}
		})
	}
}

// The restore input replaces our chains, deletes our stale ones and
// leaves the others (kube-proxy's) alone.
func TestRestoreInput(t *testing.T) {
	chains := []policyChain{
		{Name: "PCL-INGRESS", Rules: []string{"-m conntrack --ctstate RELATED,ESTABLISHED -j RETURN", "-d 10.213.0.10/32 -j PCL-POD-a"}},
		{Name: "PCL-POD-a", Rules: []string{"-j DROP"}},
	}
	got := string(restoreInput(chains, []string{"PCL-INGRESS", "PCL-POD-a", "PCL-POD-b", "PCL-POD-b-0", "KUBE-FORWARD"}))
	want := strings.Join([]string{
		"*filter",
		":PCL-INGRESS - [0:0]",
		":PCL-POD-a - [0:0]",
		":PCL-POD-b - [0:0]",
		":PCL-POD-b-0 - [0:0]",
		"-A PCL-INGRESS -m conntrack --ctstate RELATED,ESTABLISHED -j RETURN",
		"-A PCL-INGRESS -d 10.213.0.10/32 -j PCL-POD-a",
		"-A PCL-POD-a -j DROP",
		"-X PCL-POD-b",
		"-X PCL-POD-b-0",
		"COMMIT",
	}, "\n") + "\n"
	if got != want {
		t.Errorf("restore input:\n%s\nwant:\n%s", got, want)
	}
}

// TestCommentFitsIptables: a comment naming a policy of 253-character
// names is cut to what iptables takes (longer, the whole restore fails).
func TestCommentFitsIptables(t *testing.T) {
	long := strings.Repeat("n", 253) + "/" + strings.Repeat("p", 253) + " ingress[0]"
	got := comment(long)
	value := strings.TrimSuffix(strings.TrimPrefix(got, `-m comment --comment "`), `"`)
	if len(value) != 255 || !strings.HasPrefix(long, value) {
		t.Errorf("comment of %d bytes: %d bytes kept, want the first 255", len(long), len(value))
	}
	if short := comment("ns/p ingress[0]"); short != `-m comment --comment "ns/p ingress[0]"` {
		t.Errorf("a short comment changed: %s", short)
	}
}
