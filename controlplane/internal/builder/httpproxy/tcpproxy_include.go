package httpproxy

import (
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/types"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/controlplane/internal/builder/core"
	"github.com/portcullis/portcullis/controlplane/internal/ir"
	"github.com/portcullis/portcullis/controlplane/internal/status"
)

// tcpProxySource follows a root's tcpproxy.include (or its old spelling,
// includes) to the HTTPProxy whose tcpproxy has the services, and returns
// it with its findings: the root itself (with st) when it includes none.
// As Contour: an include names an HTTPProxy without a virtual host, and a
// tcpproxy has services or an include, not both; includes may chain
// (never in a cycle), at most limits.maxIncludeDepth HTTPProxies below
// the root as routes' includes. Stricter: an included HTTPProxy's routes and
// includes, which nothing would serve, are errors on it, as is the
// including tcpproxy's loadBalancerPolicy or healthCheckPolicy (the
// included one's apply). Nil (with an error on the root) when it leads
// nowhere valid; the HTTPProxies reached are the root's, not orphans.
func (b *rootBuilder) tcpProxySource(p *contourv1.HTTPProxy, st *status.Object) (*contourv1.HTTPProxy, *status.Object) {
	cur, cst := p, st
	chain := []types.NamespacedName{core.NsName(p.Namespace, p.Name)}
	for {
		inc, bad := tcpInclude(cur.Spec.TCPProxy)
		if bad != nil {
			return tcpSourceInvalid(st, cst, cur, bad.reason, bad.message)
		}
		if inc == nil {
			return cur, cst
		}
		ns := inc.Namespace
		if ns == "" {
			ns = cur.Namespace
		}
		key := core.NsName(ns, inc.Name)
		child := b.R.Proxy(key)
		if bad := b.tcpIncludeProblem(child, key, chain); bad != nil {
			if bad.tooDeep {
				st.AddError(contourv1.ConditionTypeIncludeError, bad.reason, bad.message)
				return nil, nil
			}
			return tcpSourceInvalid(st, cst, cur, bad.reason, bad.message)
		}
		b.res.visited = append(b.res.visited, key)
		b.walked = append(b.walked, ProxyRef(child.Namespace, child.Name))
		chain = append(chain, key)
		cur, cst = child, b.ProxyStatus(child)
		if len(child.Spec.Routes) > 0 || len(child.Spec.Includes) > 0 {
			cst.AddError(contourv1.ConditionTypeTCPProxyError, status.ReasonTCPProxyNotValid, "Spec.Routes and Spec.Includes of an HTTPProxy included by a tcpproxy are not served: only its tcpproxy is")
		}
		if !cst.Valid() {
			included(st, cst, cur)
			return nil, nil
		}
	}
}

// tcpInclude is a tcpproxy's include (or includes, its old spelling); nil
// for none. An error when both are set, or an include comes with settings
// of the tcpproxy's own.
func tcpInclude(t *contourv1.TCPProxy) (*contourv1.TCPProxyInclude, *tcpIncludeError) {
	inc := t.Include
	switch {
	case inc != nil && t.IncludesDeprecated != nil:
		return nil, &tcpIncludeError{reason: status.ReasonTCPProxyNotValid, message: "Spec.TCPProxy: include and includes (its old spelling) cannot both be set"}
	case inc == nil:
		inc = t.IncludesDeprecated
	}
	if inc == nil {
		return nil, nil
	}
	if len(t.Services) > 0 || t.LoadBalancerPolicy != nil || t.HealthCheckPolicy != nil {
		return nil, &tcpIncludeError{reason: status.ReasonNoServicesAndInclude, message: "Spec.TCPProxy: an include cannot be combined with services, loadBalancerPolicy or healthCheckPolicy: the included tcpproxy's apply"}
	}
	return inc, nil
}

// tcpIncludeError is why a tcpproxy's include cannot be followed.
type tcpIncludeError struct {
	reason, message string
	// tooDeep: past limits.maxIncludeDepth, an include error of the
	// root's.
	tooDeep bool
}

// tcpIncludeProblem checks the HTTPProxy key (child; nil when missing)
// that a tcpproxy at the end of chain includes; nil when it can be
// followed.
func (b *rootBuilder) tcpIncludeProblem(child *contourv1.HTTPProxy, key types.NamespacedName, chain []types.NamespacedName) *tcpIncludeError {
	switch {
	case child == nil:
		return &tcpIncludeError{reason: status.ReasonIncludeNotFound, message: fmt.Sprintf("Spec.TCPProxy.Include: include %s not found", key)}
	case child.Spec.VirtualHost != nil:
		return &tcpIncludeError{reason: status.ReasonRootIncludesRoot, message: fmt.Sprintf("Spec.TCPProxy.Include: root httpproxy cannot delegate to another root httpproxy (%s)", key)}
	case slices.Contains(chain, key):
		return &tcpIncludeError{reason: status.ReasonIncludeCreatesCycle, message: fmt.Sprintf("Spec.TCPProxy.Include: include creates a delegation cycle: %s", chainString(append(chain, key)))}
	case len(chain) > b.exp.limits.MaxIncludeDepth:
		// chain[0] is the root: child would be len(chain) deep.
		return &tcpIncludeError{reason: status.ReasonIncludeLimitExceeded, tooDeep: true, message: fmt.Sprintf("Spec.TCPProxy.Include: more than %d HTTPProxies deep (limits.maxIncludeDepth) at %s: no connection is proxied", b.exp.limits.MaxIncludeDepth, chainString(append(chain, key)))}
	case child.Spec.TCPProxy == nil:
		return &tcpIncludeError{reason: status.ReasonTCPProxyNotValid, message: fmt.Sprintf("Spec.TCPProxy.Include: included HTTPProxy %s has no tcpproxy", key)}
	}
	return nil
}

// tcpSourceInvalid reports why the tcpproxy of cur (with findings cst)
// is invalid, and on the root (st) that its include is when cur is not
// the root; nil: no source.
func tcpSourceInvalid(st, cst *status.Object, cur *contourv1.HTTPProxy, reason, message string) (*contourv1.HTTPProxy, *status.Object) {
	condType := contourv1.ConditionTypeTCPProxyError
	switch reason {
	case status.ReasonIncludeNotFound, status.ReasonRootIncludesRoot, status.ReasonIncludeCreatesCycle:
		condType = contourv1.ConditionTypeTCPProxyIncludeError // as Contour
	}
	cst.AddError(condType, reason, message)
	if cst != st {
		included(st, cst, cur)
	}
	return nil, nil
}

// included reports on the root (st) that the tcpproxy it includes, cur's
// (with findings cst), is invalid, and returns nil: no connection is
// proxied to half a tcpproxy.
func included(st, cst *status.Object, cur *contourv1.HTTPProxy) *ir.TCPHost {
	if cst != st {
		st.AddError(contourv1.ConditionTypeTCPProxyError, status.ReasonIncludedProxyInvalid, fmt.Sprintf("Spec.TCPProxy.Include: included HTTPProxy %s is invalid: no connection is proxied", core.NsName(cur.Namespace, cur.Name)))
	}
	return nil
}
