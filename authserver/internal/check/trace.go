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
// Check span. A no-op when the check is not traced.
func SetReason(ctx context.Context, reason string) {
	if r := ReasonOf(ctx); r != nil {
		*r = reason
	}
}

// ReasonOf is where SetReason writes for the check of ctx, nil when the
// check is not traced: for a backend that keeps per-check state rather
// than passing ctx down.
func ReasonOf(ctx context.Context) *string {
	r, _ := ctx.Value(reasonKey{}).(*string)
	return r
}

// traced returns ctx with room for SetReason when span records.
func traced(ctx context.Context, span trace.Span) (context.Context, *string) {
	if !span.IsRecording() {
		return ctx, nil
	}
	reason := new(string)
	return context.WithValue(ctx, reasonKey{}, reason), reason
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
