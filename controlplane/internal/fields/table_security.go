package fields

// security is the part of the HTTPProxy table under the virtual hosts' and
// routes' IP filters, mounted in table.go's HTTPProxy tree.
var security = merge(
	tree("virtualhost.ipAllowPolicy", ipFilterPolicy),
	tree("virtualhost.ipDenyPolicy", ipFilterPolicy),
	tree("routes.ipAllowPolicy", ipFilterPolicy),
	tree("routes.ipDenyPolicy", ipFilterPolicy),
)

var ipFilterPolicy = entries{
	"":       yes,
	"source": yes,
	"cidr":   yes,
}
