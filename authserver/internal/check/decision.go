package check

import (
	"context"
	"strings"
	"unicode"
	"unicode/utf8"

	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"
	"google.golang.org/protobuf/types/known/structpb"
)

// Every answer carries its decision as Envoy's dynamic metadata (namespace
// envoy.filters.http.ext_authz), for the access log and the filters after
// ext_authz: Wrap sets it, from the result and from what the backend noted
// (Note), so that every backend says it the same way. docs/tracing.md
// documents the keys and an access log format that prints them.
const (
	// MetadataDecision is the result label: allowed, denied, redirect or
	// error.
	MetadataDecision = "decision"
	// MetadataReason says why, in one snake_case word of the backend's
	// (bad_credentials, session, bearer, forbidden, ...); the decision
	// when the backend noted none.
	MetadataReason = "reason"
	// MetadataUser is who was let in: on allowed answers only.
	MetadataUser = "user"
	// MetadataBackend is the backend that decided (htpasswd, oidc,
	// testserver).
	MetadataBackend = "backend"
)

// maxMetadataValue bounds a value Envoy copies into every access log line:
// a user name or claim is the client's or the provider's.
const maxMetadataValue = 256

// Note collects what a backend says about its decision; Wrap gives each
// Check its own (NoteFrom). SetReason(ctx, r) is NoteFrom(ctx).Reason(r):
// one reason for the metadata, the log line and the Check span.
type Note struct {
	reason, user string
}

type noteKey struct{}

// NoteFrom is the Check's Note; a throwaway one when ctx has none (a
// backend called without Wrap, as in its own tests), never nil.
func NoteFrom(ctx context.Context) *Note {
	if n, ok := ctx.Value(noteKey{}).(*Note); ok {
		return n
	}
	return &Note{}
}

// Reason notes why; the last one noted wins. A nil Note notes nothing.
func (n *Note) Reason(reason string) {
	if n != nil {
		n.reason = reason
	}
}

// ReasonIfNone notes why unless a reason is noted already.
func (n *Note) ReasonIfNone(reason string) {
	if n != nil && n.reason == "" {
		n.reason = reason
	}
}

// User notes who the request is from (kept on an allowed answer only).
func (n *Note) User(user string) {
	if n != nil {
		n.user = user
	}
}

// withNote is ctx with a new Note, whose reason SetReason also sets.
func withNote(ctx context.Context) (context.Context, *Note) {
	n := &Note{}
	ctx = context.WithValue(ctx, reasonKey{}, &n.reason)
	return context.WithValue(ctx, noteKey{}, n), n
}

// decide sets resp's dynamic metadata: the decision, the reason, the
// backend and, when allowed, the user. A denial never names a user: the
// name it would have is the client's claim, not a fact.
func decide(resp *authv3.CheckResponse, backend, result string, n *Note) {
	fields := map[string]*structpb.Value{
		MetadataDecision: structpb.NewStringValue(result),
		MetadataReason:   structpb.NewStringValue(logSafe(n.reason, result)),
		MetadataBackend:  structpb.NewStringValue(backend),
	}
	if result == ResultAllowed && n.user != "" {
		fields[MetadataUser] = structpb.NewStringValue(logSafe(n.user, ""))
	}
	resp.DynamicMetadata = &structpb.Struct{Fields: fields}
}

// logSafe is v (or def when empty) fit for a log line: valid UTF-8, no
// control characters (a newline would forge a line), no quotes (which end
// a JSON or quoted text field), at most maxMetadataValue bytes.
func logSafe(v, def string) string {
	if v == "" {
		return def
	}
	var b strings.Builder
	for _, r := range v {
		switch {
		case r == utf8.RuneError, unicode.IsControl(r), r == '\u2028', r == '\u2029', r == '"', r == '\\':
			r = '_'
		}
		if b.Len()+utf8.RuneLen(r) > maxMetadataValue {
			break
		}
		b.WriteRune(r)
	}
	return b.String()
}
