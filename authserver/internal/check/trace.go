package check

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// Attributes Wrap sets on the Check span (the gRPC server span) when the
// call is traced.
const (
	// AttrDecision is allow or deny (a redirect or an error denies).
	AttrDecision = "portcullis.auth.decision"
	// AttrReason is why: what the backend gave to SetReason, else the
	// result (allowed, denied, redirect, error).
	AttrReason = "portcullis.auth.reason"
)

type reasonKey struct{}

// SetReason tells Wrap why the backend is answering as it does (a short
// snake_case word such as bad_credentials, never a credential), for the
// Check span and the answer's metadata (Note). A no-op outside Wrap.
func SetReason(ctx context.Context, reason string) {
	if r := ReasonOf(ctx); r != nil {
		*r = reason
	}
}

// ReasonOf is where SetReason writes for the check of ctx (the Check's
// Note's reason under Wrap), nil outside Wrap: for a backend that keeps
// per-check state rather than passing ctx down.
func ReasonOf(ctx context.Context) *string {
	r, _ := ctx.Value(reasonKey{}).(*string)
	return r
}

// annotate sets the decision attributes on span (reason nil: untraced).
func annotate(span trace.Span, reason *string, result string) {
	if reason == nil {
		return
	}
	decision := "deny"
	if result == ResultAllowed {
		decision = "allow"
	}
	if *reason == "" {
		*reason = result
	}
	span.SetAttributes(attribute.String(AttrDecision, decision), attribute.String(AttrReason, *reason))
}
