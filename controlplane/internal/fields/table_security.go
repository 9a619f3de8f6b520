package fields

// security is the part of the HTTPProxy table under the virtual hosts' and
// routes' IP filters, rate limits and JWT verification and the virtual
// hosts' CORS policies, mounted in table.go's HTTPProxy tree.
var security = merge(
	tree("virtualhost.ipAllowPolicy", ipFilterPolicy),
	tree("virtualhost.ipDenyPolicy", ipFilterPolicy),
	tree("routes.ipAllowPolicy", ipFilterPolicy),
	tree("routes.ipDenyPolicy", ipFilterPolicy),
	tree("virtualhost.corsPolicy", corsPolicy),
	tree("virtualhost.rateLimitPolicy", rateLimitPolicy),
	tree("routes.rateLimitPolicy", rateLimitPolicy),
	tree("virtualhost.jwtProviders", jwtProvider),
	tree("virtualhost.jwtProviders.remoteJWKS.validation", upstreamValidation),
	entries{
		"routes.jwtVerificationPolicy":          yes,
		"routes.jwtVerificationPolicy.require":  yes,
		"routes.jwtVerificationPolicy.disabled": yes,
	},
)

var ipFilterPolicy = entries{
	"":       yes,
	"source": yes,
	"cidr":   yes,
}

var corsPolicy = entries{
	"":                    yes,
	"allowCredentials":    yes,
	"allowOrigin":         yes,
	"allowMethods":        yes,
	"allowHeaders":        yes,
	"exposeHeaders":       yes,
	"maxAge":              yes,
	"allowPrivateNetwork": yes,
}

var rateLimitPolicy = entries{
	"":                                 yes,
	"local":                            yes,
	"local.requests":                   yes,
	"local.unit":                       yes,
	"local.burst":                      yes,
	"local.responseStatusCode":         yes,
	"local.responseHeadersToAdd":       yes,
	"local.responseHeadersToAdd.name":  yes,
	"local.responseHeadersToAdd.value": yes,
	"global":                           Refused("global rate limiting (a rate limit service counting for every Envoy) is not implemented: requests would not be limited (rateLimitPolicy.local is)"),
}

var jwtProvider = entries{
	"":                           yes,
	"name":                       yes,
	"default":                    yes,
	"issuer":                     yes,
	"audiences":                  yes,
	"forwardJWT":                 yes,
	"remoteJWKS":                 yes,
	"remoteJWKS.uri":             yes,
	"remoteJWKS.timeout":         yes,
	"remoteJWKS.cacheDuration":   yes,
	"remoteJWKS.dnsLookupFamily": yes,
}
