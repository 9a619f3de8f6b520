package fields

// tcpProxy is the part of the HTTPProxy table under spec.tcpproxy, mounted
// in table.go's HTTPProxy tree. A TCP service is a name, a port and a
// weight: what a route's service adds acts on HTTP requests and responses
// (or is not implemented for TCP yet).
var tcpProxy = merge(
	entries{
		"tcpproxy.services":        yes,
		"tcpproxy.services.name":   yes,
		"tcpproxy.services.port":   yes,
		"tcpproxy.services.weight": yes,

		"tcpproxy.services.protocol":              Refused("an upstream protocol does not apply to a TCP proxy's service, which receives the connection's bytes as they come"),
		"tcpproxy.services.validation":            Refused("TLS to a TCP proxy's service (and its validation) is not implemented"),
		"tcpproxy.services.healthPort":            Refused("a health check port for a TCP proxy's service is not implemented"),
		"tcpproxy.services.mirror":                Refused("mirroring does not apply to a TCP proxy's service: it mirrors HTTP requests"),
		"tcpproxy.services.requestHeadersPolicy":  Refused("headers policies do not apply to a TCP proxy's service: there are no HTTP requests"),
		"tcpproxy.services.responseHeadersPolicy": Refused("headers policies do not apply to a TCP proxy's service: there are no HTTP responses"),
		"tcpproxy.services.cookieRewritePolicies": Refused("cookie rewrites do not apply to a TCP proxy's service: there are no HTTP responses"),
		"tcpproxy.services.slowStartPolicy":       Refused("slow start for a TCP proxy's services is not implemented"),

		"tcpproxy.loadBalancerPolicy":                     yes,
		"tcpproxy.loadBalancerPolicy.strategy":            yes,
		"tcpproxy.loadBalancerPolicy.requestHashPolicies": Refused("request hash load balancing does not apply to a TCP proxy: there are no HTTP requests to hash (RoundRobin, WeightedLeastRequest and Random are implemented)"),

		"tcpproxy.healthCheckPolicy":                         yes,
		"tcpproxy.healthCheckPolicy.intervalSeconds":         yes,
		"tcpproxy.healthCheckPolicy.timeoutSeconds":          yes,
		"tcpproxy.healthCheckPolicy.unhealthyThresholdCount": yes,
		"tcpproxy.healthCheckPolicy.healthyThresholdCount":   yes,
		"tcpproxy.include":                                   yes,
		"tcpproxy.include.name":                              yes,
		"tcpproxy.include.namespace":                         yes,
		"tcpproxy.includes":                                  yes,
		"tcpproxy.includes.name":                             yes,
		"tcpproxy.includes.namespace":                        yes,
	},
)
