package gatewayapi

import (
	"slices"
	"strings"

	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/portcullis/portcullis/controlplane/internal/builder/core"
	"github.com/portcullis/portcullis/controlplane/internal/ir"
)

// backendClientCert resolves a Gateway's spec.tls.backend.clientCertificateRef:
// the certificate its routes present to the backends Envoy speaks TLS to
// (GatewayBackendClientCertificate). A TLS Secret of the Gateway's
// namespace, or of another whose ReferenceGrant allows it; one that does
// not resolve is said in the Gateway's ResolvedRefs, and no certificate is
// presented (a backend that requires one refuses the connection: never
// more open).
func (g *gatewayStage) backendClientCert(x *gwGateway) {
	t := x.gw.Spec.TLS
	if t == nil || t.Backend == nil || t.Backend.ClientCertificateRef == nil {
		return
	}
	ref := *t.Backend.ClientCertificateRef
	group, kind := orDefault(ref.Group, ""), orDefault(ref.Kind, kindSecret)
	key := core.NsName(string(orDefault(ref.Namespace, gwapiv1.Namespace(x.gw.Namespace))), string(ref.Name))
	const where = "spec.tls.backend.clientCertificateRef"
	switch {
	case group != "" || kind != kindSecret:
		x.refs.add(string(gwapiv1.GatewayReasonInvalidClientCertificateRef), "%s: kind %s of group %q is not a Secret", where, kind, group)
		return
	case key.Namespace != x.gw.Namespace && !g.grants.permits(gatewayGroup, kindGateway, x.gw.Namespace, "", kindSecret, key):
		x.refs.add(string(gwapiv1.GatewayReasonRefNotPermitted), "%s: Secret %s is in another namespace and no ReferenceGrant there allows Gateways of %s to use it", where, key, x.gw.Namespace)
		return
	}
	s, err := g.R.Certificate(key)
	if err != nil {
		x.refs.add(string(gwapiv1.GatewayReasonInvalidClientCertificateRef), "%s: Secret %s: %v", where, key, err)
		return
	}
	x.clientCert = s
}

// withClientCert is routes with their TLS Service backends (and mirrors)
// sent to a copy of their cluster that presents x's client certificate:
// a cluster is shared by the routes of every Gateway (and HTTPProxy), the
// certificate is the Gateway's. The routes are copied: they may be
// shared.
func (g *gatewayStage) withClientCert(x *gwGateway, routes []*ir.Route) []*ir.Route {
	if x.clientCert == nil {
		return routes
	}
	if g.clusterByName == nil {
		g.clusterByName = map[string]*ir.Cluster{}
		for _, c := range g.Out.Clusters {
			g.clusterByName[c.Name] = c
		}
	}
	gw := x.ref()
	variant := func(name string) string {
		c := g.clusterByName[name]
		if c == nil || !strings.HasPrefix(name, "service/") || (c.Protocol != ir.TLS && c.Protocol != ir.H2) {
			return name
		}
		v := *c
		v.Name, v.ClientSecret = name+"/client-"+core.SettingsHash(x.clientCert.Name), x.clientCert.Name
		if g.clusterByName[v.Name] == nil {
			g.clusterByName[v.Name] = &v
			g.Out.AddCluster(&v)
		}
		g.Out.ClusterUses.Add(v.Name, gw)
		g.Out.UseSecret(x.clientCert)
		g.Out.SecretUses.Add(x.clientCert.Name, gw)
		return v.Name
	}
	out := make([]*ir.Route, len(routes))
	for i, r := range routes {
		x := *r
		x.Clusters = slices.Clone(r.Clusters)
		for j := range x.Clusters {
			x.Clusters[j].Cluster = variant(x.Clusters[j].Cluster)
		}
		x.Mirrors = slices.Clone(r.Mirrors)
		for j := range x.Mirrors {
			x.Mirrors[j].Cluster = variant(x.Mirrors[j].Cluster)
		}
		out[i] = &x
	}
	return out
}
