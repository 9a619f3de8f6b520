package fields

// security is the part of the HTTPProxy table under the virtual hosts' and
// routes' IP filters and the virtual hosts' CORS policies, mounted in
// table.go's HTTPProxy tree.
var security = merge(
	tree("virtualhost.ipAllowPolicy", ipFilterPolicy),
	tree("virtualhost.ipDenyPolicy", ipFilterPolicy),
	tree("routes.ipAllowPolicy", ipFilterPolicy),
	tree("routes.ipDenyPolicy", ipFilterPolicy),
	tree("virtualhost.corsPolicy", corsPolicy),
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
