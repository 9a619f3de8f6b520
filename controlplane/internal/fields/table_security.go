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
	tree("virtualhost.rateLimitPolicy.global.descriptors.entries.requestHeaderValueMatch.headers", headerMatchCondition),
	tree("routes.rateLimitPolicy.global.descriptors.entries.requestHeaderValueMatch.headers", headerMatchCondition),
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
	"":                                      yes,
	"local":                                 yes,
	"local.requests":                        yes,
	"local.unit":                            yes,
	"local.burst":                           yes,
	"local.responseStatusCode":              yes,
	"local.responseHeadersToAdd":            yes,
	"local.responseHeadersToAdd.name":       yes,
	"local.responseHeadersToAdd.value":      yes,
	"global":                                yes,
	"global.disabled":                       yes,
	"global.descriptors":                    yes,
	"global.descriptors.entries":            yes,
	"global.descriptors.entries.genericKey": yes,
	"global.descriptors.entries.genericKey.key":                      yes,
	"global.descriptors.entries.genericKey.value":                    yes,
	"global.descriptors.entries.requestHeader":                       yes,
	"global.descriptors.entries.requestHeader.headerName":            yes,
	"global.descriptors.entries.requestHeader.descriptorKey":         yes,
	"global.descriptors.entries.requestHeaderValueMatch":             yes,
	"global.descriptors.entries.requestHeaderValueMatch.expectMatch": yes,
	"global.descriptors.entries.requestHeaderValueMatch.value":       yes,
	"global.descriptors.entries.remoteAddress":                       yes,
}

var jwtProvider = entries{
	"":           yes,
	"name":       yes,
	"default":    yes,
	"issuer":     yes,
	"audiences":  yes,
	"forwardJWT": yes,
	"remoteJWKS": yes,
	"remoteJWKS.uri": ImplementedNote("an `https` URI without `validation` is verified against the system's trust roots " +
		"(`--system-ca-file`), its host name as SNI and DNS SAN, where Contour skips verification; without roots it is refused"),
	"remoteJWKS.timeout":         yes,
	"remoteJWKS.cacheDuration":   yes,
	"remoteJWKS.dnsLookupFamily": yes,
}
