// Package httpproxy is the builder's HTTPProxy front door, over the
// builder's core. Which root keeps a host name is decided across roots
// (hosts.go); then each root HTTPProxy is built on its own by BuildRoot
// (root.go), a function of the root and of what it reads through its
// Resolver, which records every lookup. The root's walk (walk.go, bounded
// by expand.go) follows its includes; each route is a short function
// (route.go) calling one validator per concern: conditions, services,
// headers, timeouts, TLS, authorization (extauth.go), processing
// (extproc.go), rate limits, and the rest, one file each. A RootMemo
// (rootmemo.go) reuses a root's result while its recorded reads hold; no
// rule sees it. roots.go merges the results into the model.
package httpproxy
