package fields

// routing is the part of the HTTPProxy table under the routes' retry,
// load balancing, health checking and mirroring policies, mounted in
// table.go's HTTPProxy tree (the fields of those policies themselves are
// there).
var routing = merge(
	tree("routes.retryPolicy", retryPolicy),
	tree("routes.loadBalancerPolicy", loadBalancerPolicy),
	tree("routes.services.slowStartPolicy", slowStartPolicy),
	tree("routes.healthCheckPolicy", healthCheckPolicy),
	tree("routes.internalRedirectPolicy", internalRedirectPolicy),
	tree("routes.cookieRewritePolicies", cookieRewritePolicy),
	tree("routes.services.cookieRewritePolicies", cookieRewritePolicy),
)

var retryPolicy = entries{
	"count":                yes,
	"perTryTimeout":        yes,
	"retryOn":              yes,
	"retriableStatusCodes": yes,
}

var loadBalancerPolicy = entries{
	"strategy":                                                    yes,
	"requestHashPolicies":                                         yes,
	"requestHashPolicies.terminal":                                yes,
	"requestHashPolicies.headerHashOptions":                       yes,
	"requestHashPolicies.headerHashOptions.headerName":            yes,
	"requestHashPolicies.queryParameterHashOptions":               yes,
	"requestHashPolicies.queryParameterHashOptions.parameterName": yes,
	"requestHashPolicies.hashSourceIP":                            yes,
}

var slowStartPolicy = entries{
	"window":           yes,
	"aggression":       yes,
	"minWeightPercent": yes,
}

var healthCheckPolicy = entries{
	"path":                    yes,
	"host":                    yes,
	"intervalSeconds":         yes,
	"timeoutSeconds":          yes,
	"unhealthyThresholdCount": yes,
	"healthyThresholdCount":   yes,
	"expectedStatuses":        yes,
	"expectedStatuses.start":  yes,
	"expectedStatuses.end":    yes,
}

var internalRedirectPolicy = entries{
	"maxInternalRedirects":      yes,
	"redirectResponseCodes":     yes,
	"allowCrossSchemeRedirect":  yes,
	"denyRepeatedRouteRedirect": yes,
}

var cookieRewritePolicy = entries{
	"name":                yes,
	"pathRewrite":         yes,
	"pathRewrite.value":   yes,
	"domainRewrite":       yes,
	"domainRewrite.value": yes,
	"secure":              yes,
	"sameSite":            yes,
}
