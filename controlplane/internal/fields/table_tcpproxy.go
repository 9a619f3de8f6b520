package fields

// tcpProxy is the part of the HTTPProxy table under spec.tcpproxy, mounted
// in table.go's HTTPProxy tree. A TCP service has what a route's service
// sets on its cluster (TLS to it and its validation, slow start, a health
// check port); what a route's service adds that acts on HTTP requests and
// responses does not apply to a stream of bytes.
var tcpProxy = merge(
	entries{
		"tcpproxy.services":        yes,
		"tcpproxy.services.name":   yes,
		"tcpproxy.services.port":   yes,
		"tcpproxy.services.weight": yes,

		"tcpproxy.services.protocol":              yes,
		"tcpproxy.services.healthPort":            yes,
		"tcpproxy.services.slowStartPolicy":       yes,
		"tcpproxy.services.mirror":                Refused("mirroring does not apply to a TCP proxy's service: it mirrors HTTP requests"),
		"tcpproxy.services.requestHeadersPolicy":  Refused("headers policies do not apply to a TCP proxy's service: there are no HTTP requests"),
		"tcpproxy.services.responseHeadersPolicy": Refused("headers policies do not apply to a TCP proxy's service: there are no HTTP responses"),
		"tcpproxy.services.cookieRewritePolicies": Refused("cookie rewrites do not apply to a TCP proxy's service: there are no HTTP responses"),

		"tcpproxy.loadBalancerPolicy":                     yes,
		"tcpproxy.loadBalancerPolicy.strategy":            yes,
		"tcpproxy.loadBalancerPolicy.requestHashPolicies": NoEffect("request hash load balancing does not apply to a TCP proxy: there are no HTTP requests to hash; as Contour, the strategies Cookie and RequestHash are RoundRobin there"),

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
	tree("tcpproxy.services.validation", upstreamValidation),
	tree("tcpproxy.services.slowStartPolicy", slowStartPolicy),
)
