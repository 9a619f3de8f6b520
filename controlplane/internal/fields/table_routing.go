package fields

// routing is the part of the HTTPProxy table under the routes' retry,
// load balancing, health checking and mirroring policies, mounted in
// table.go's HTTPProxy tree (the fields of those policies themselves are
// there).
var routing = merge(
	tree("routes.retryPolicy", retryPolicy),
)

var retryPolicy = entries{
	"count":                yes,
	"perTryTimeout":        yes,
	"retryOn":              yes,
	"retriableStatusCodes": yes,
}
