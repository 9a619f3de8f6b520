package fields

import "maps"

// The table: every field path of the spec of each kind, Implemented or
// Refused. A path is Implemented only when the builder really translates
// it (or validates it and says why not, in its own words); everything
// else is Refused, with what the field would do. TestTableCoversTheTypes
// fails on a path of the Go types this table lacks.
var table = map[string]entries{
	KindHTTPProxy: tree("spec",
		entries{
			"virtualhost":      yes,
			"virtualhost.fqdn": yes,

			"virtualhost.tls":                                                   yes,
			"virtualhost.tls.secretName":                                        yes,
			"virtualhost.tls.minimumProtocolVersion":                            yes,
			"virtualhost.tls.maximumProtocolVersion":                            yes,
			"virtualhost.tls.enableFallbackCertificate":                         yes,
			"virtualhost.tls.passthrough":                                       yes,
			"virtualhost.tls.clientValidation":                                  yes,
			"virtualhost.tls.clientValidation.caSecret":                         yes,
			"virtualhost.tls.clientValidation.skipClientCertValidation":         yes,
			"virtualhost.tls.clientValidation.forwardClientCertificate":         yes,
			"virtualhost.tls.clientValidation.forwardClientCertificate.subject": yes,
			"virtualhost.tls.clientValidation.forwardClientCertificate.cert":    yes,
			"virtualhost.tls.clientValidation.forwardClientCertificate.chain":   yes,
			"virtualhost.tls.clientValidation.forwardClientCertificate.dns":     yes,
			"virtualhost.tls.clientValidation.forwardClientCertificate.uri":     yes,
			"virtualhost.tls.clientValidation.crlSecret":                        yes,
			"virtualhost.tls.clientValidation.crlOnlyVerifyLeafCert":            yes,
			"virtualhost.tls.clientValidation.optionalClientCertificate":        yes,

			"virtualhost.authorization":                                     yes,
			"virtualhost.authorization.responseTimeout":                     yes,
			"virtualhost.authorization.failOpen":                            yes,
			"virtualhost.authorization.withRequestBody":                     yes,
			"virtualhost.authorization.withRequestBody.maxRequestBytes":     yes,
			"virtualhost.authorization.withRequestBody.allowPartialMessage": yes,
			"virtualhost.authorization.withRequestBody.packAsBytes":         yes,
			"virtualhost.authorization.globalExtAuthDisabled":               NotInContour("Contour's way is `authPolicy: {disabled: true}` on a host without `extensionRef`, which Portcullis implements too: it turns the global authorization off for the host's routes by default, and a route may turn it back on (`authPolicy: {disabled: false}`); `globalExtAuthDisabled` is final for every route"),
			"virtualhost.authorization.serviceType":                         yes,
			"virtualhost.authorization.httpSettings":                        yes,
			"virtualhost.authorization.httpSettings.pathPrefix":             yes,

			"virtualhost.extProc":          NotInContour("external processing; Contour has none"),
			"virtualhost.extProc.disabled": yes,

			"routes":                        yes,
			"routes.permitInsecure":         yes,
			"routes.extProcPolicy":          NotInContour("external processing; Contour has none"),
			"routes.extProcPolicy.disabled": yes,

			"routes.enableWebsockets":       yes,
			"routes.retryPolicy":            yes,
			"routes.healthCheckPolicy":      yes,
			"routes.loadBalancerPolicy":     yes,
			"routes.cookieRewritePolicies":  yes,
			"routes.internalRedirectPolicy": yes,

			"routes.pathRewritePolicy":                           yes,
			"routes.pathRewritePolicy.replacePrefix":             yes,
			"routes.pathRewritePolicy.replacePrefix.prefix":      yes,
			"routes.pathRewritePolicy.replacePrefix.replacement": yes,

			"routes.requestRedirectPolicy":            yes,
			"routes.requestRedirectPolicy.scheme":     yes,
			"routes.requestRedirectPolicy.hostname":   yes,
			"routes.requestRedirectPolicy.port":       yes,
			"routes.requestRedirectPolicy.statusCode": yes,
			"routes.requestRedirectPolicy.path":       yes,
			"routes.requestRedirectPolicy.prefix":     yes,

			"routes.directResponsePolicy":            yes,
			"routes.directResponsePolicy.statusCode": yes,
			"routes.directResponsePolicy.body":       yes,

			"routes.services":                       yes,
			"routes.services.name":                  yes,
			"routes.services.port":                  yes,
			"routes.services.protocol":              yes,
			"routes.services.weight":                yes,
			"routes.services.healthPort":            yes,
			"routes.services.mirror":                yes,
			"routes.services.cookieRewritePolicies": yes,
			"routes.services.slowStartPolicy":       yes,

			"includes":           yes,
			"includes.name":      yes,
			"includes.namespace": yes,
			// Validated, as Contour: an include matches a prefix of paths, so
			// an exact or regex path on one is the including proxy's error.
			"includes.conditions.exact": ImplementedNote("not allowed on an include, whose conditions match a prefix of the included routes' paths: IncludeError/PathMatchConditionsNotValid (as Contour), and the including HTTPProxy is invalid"),
			"includes.conditions.regex": ImplementedNote("not allowed on an include, whose conditions match a prefix of the included routes' paths (the included routes can have regex conditions): IncludeError/PathMatchConditionsNotValid (as Contour), and the including HTTPProxy is invalid"),

			"ingressClassName": yes,

			"tcpproxy": yes,
		},
		tcpProxy, // table_tcpproxy.go
		tree("virtualhost.authorization.extensionRef", extensionRef),
		tree("virtualhost.authorization.authPolicy", authPolicy),
		tree("virtualhost.authorization.httpSettings.allowedAuthorizationHeaders", allowedHeaders),
		tree("virtualhost.authorization.httpSettings.allowedUpstreamHeaders", allowedHeaders),
		tree("virtualhost.extProc.processor", extProc),
		tree("routes.conditions", matchCondition),
		tree("routes.authPolicy", authPolicy),
		tree("routes.timeoutPolicy", timeoutPolicy),
		tree("routes.services.validation", upstreamValidation),
		tree("routes.requestHeadersPolicy", headersPolicy),
		tree("routes.responseHeadersPolicy", headersPolicy),
		tree("routes.services.requestHeadersPolicy", headersPolicy),
		tree("routes.services.responseHeadersPolicy", headersPolicy),
		tree("routes.extProcPolicy.overrides", extProc),
		tree("includes.conditions", without(matchCondition, "exact", "regex")),
		routing,  // table_routing.go
		security, // table_security.go
	),

	KindExtensionService: tree("spec", entries{
		"services":        yes,
		"services.name":   yes,
		"services.port":   yes,
		"services.weight": yes,

		"protocol":                                   yes,
		"protocolVersion":                            yes,
		"loadBalancerPolicy":                         yes,
		"loadBalancerPolicy.strategy":                yes,
		"loadBalancerPolicy.requestHashPolicies":     NoEffect("request hash load balancing does not apply to an ExtensionService: Envoy hashes a route's requests, and the filters that call an ExtensionService have no route; as Contour, the strategies Cookie and RequestHash are RoundRobin there"),
		"circuitBreakerPolicy":                       yes,
		"circuitBreakerPolicy.maxConnections":        yes,
		"circuitBreakerPolicy.maxPendingRequests":    yes,
		"circuitBreakerPolicy.maxRequests":           yes,
		"circuitBreakerPolicy.maxRetries":            yes,
		"circuitBreakerPolicy.perHostMaxConnections": yes,

		"healthCheckPolicy":                         yes,
		"healthCheckPolicy.serviceName":             yes,
		"healthCheckPolicy.intervalSeconds":         yes,
		"healthCheckPolicy.timeoutSeconds":          yes,
		"healthCheckPolicy.unhealthyThresholdCount": yes,
		"healthCheckPolicy.healthyThresholdCount":   yes,
	},
		tree("validation", upstreamValidation),
		tree("timeoutPolicy", timeoutPolicy),
	),

	KindTLSCertificateDelegation: tree("spec", entries{
		"delegations":                  yes,
		"delegations.secretName":       yes,
		"delegations.targetNamespaces": yes,
	}),
}

// Parts of the table that several fields share (one Go type, used in
// several places), relative to where they are mounted ("" is the field
// itself).

var matchCondition = merge(
	entries{
		"":                          yes,
		"prefix":                    yes,
		"exact":                     yes,
		"regex":                     yes,
		"queryParameter":            yes,
		"queryParameter.name":       yes,
		"queryParameter.exact":      yes,
		"queryParameter.prefix":     yes,
		"queryParameter.suffix":     yes,
		"queryParameter.regex":      yes,
		"queryParameter.contains":   yes,
		"queryParameter.ignoreCase": yes,
		"queryParameter.present":    yes,
	},
	tree("header", headerMatchCondition),
)

// headerMatchCondition is a header condition (a route's, or a global
// rate limit's requestHeaderValueMatch's).
var headerMatchCondition = entries{
	"":                    yes,
	"name":                yes,
	"present":             yes,
	"notpresent":          yes,
	"contains":            yes,
	"notcontains":         yes,
	"ignoreCase":          yes,
	"exact":               yes,
	"notexact":            yes,
	"regex":               yes,
	"treatMissingAsEmpty": yes,
}

var upstreamValidation = entries{
	"":             yes,
	"caSecret":     yes,
	"subjectName":  yes,
	"subjectNames": yes,
}

var timeoutPolicy = entries{
	"":               yes,
	"response":       yes,
	"idle":           yes,
	"idleConnection": yes,
}

var headersPolicy = entries{
	"":          yes,
	"set":       yes,
	"set.name":  yes,
	"set.value": yes,
	"remove":    yes,
}

var authPolicy = entries{
	"":         yes,
	"disabled": yes,
	"context":  yes,
}

// allowedHeaders are an HTTP authorization server's header name matchers.
var allowedHeaders = entries{
	"":           yes,
	"exact":      yes,
	"prefix":     yes,
	"suffix":     yes,
	"contains":   yes,
	"ignoreCase": yes,
}

var extensionRef = entries{
	"":           yes,
	"apiVersion": yes,
	"kind":       yes,
	"namespace":  yes,
	"name":       yes,
}

var extProc = merge(
	entries{
		"":                                   yes,
		"grpcService":                        yes,
		"grpcService.responseTimeout":        yes,
		"grpcService.failOpen":               yes,
		"processingMode":                     yes,
		"processingMode.requestHeaderMode":   yes,
		"processingMode.responseHeaderMode":  yes,
		"processingMode.requestBodyMode":     yes,
		"processingMode.responseBodyMode":    yes,
		"processingMode.requestTrailerMode":  yes,
		"processingMode.responseTrailerMode": yes,
		"mutationRules":                      yes,
		"mutationRules.allowAllRouting":      yes,
		"mutationRules.allowEnvoy":           yes,
		"mutationRules.disallowSystem":       yes,
		"mutationRules.disallowAll":          yes,
		"mutationRules.disallowIsError":      yes,
		"allowModeOverride":                  yes,
	},
	tree("grpcService.extensionRef", extensionRef),
)

// yes is Implemented, for the table's brevity.
var yes = Implemented()

// entries maps field paths to their support.
type entries map[string]Support

// tree mounts parts under prefix: "a" becomes prefix+".a", "" the prefix
// itself.
func tree(prefix string, parts ...entries) entries {
	out := entries{}
	for _, p := range parts {
		for k, s := range p {
			key := prefix
			if k != "" {
				key += "." + k
			}
			out.add(key, s)
		}
	}
	return out
}

// without is e less some paths (classified otherwise where it is mounted).
func without(e entries, paths ...string) entries {
	out := maps.Clone(e)
	for _, p := range paths {
		delete(out, p)
	}
	return out
}

// merge joins parts that share a root.
func merge(parts ...entries) entries {
	out := entries{}
	for _, p := range parts {
		for k, s := range p {
			out.add(k, s)
		}
	}
	return out
}

// add refuses a path classified twice: the table must say one thing.
func (e entries) add(key string, s Support) {
	if _, dup := e[key]; dup {
		panic("fields: " + key + " is in the table twice")
	}
	e[key] = s
}
