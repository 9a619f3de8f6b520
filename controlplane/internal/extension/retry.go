package extension

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/portcullis/portcullis/controlplane/internal/config"
)

// Retry retries a failed call, within the call's own timeout (gRPC's
// retry policy: the deadline and the phase budget bound every attempt
// together).
type Retry struct {
	// MaxAttempts counts the first call: 2 to 5 (gRPC's limit).
	MaxAttempts                int
	InitialBackoff, MaxBackoff time.Duration
	BackoffMultiplier          float64
	// Codes are the gRPC codes retried.
	Codes []codes.Code
}

// DefaultRetry is Envoy Gateway's: what an extension of that dialect is
// called with when its registration says nothing.
var DefaultRetry = Retry{MaxAttempts: 4, InitialBackoff: 100 * time.Millisecond, MaxBackoff: time.Second, BackoffMultiplier: 2, Codes: []codes.Code{codes.Unavailable}}

// retryOf is the registration's Retry of the file's, its unset fields at
// DefaultRetry's; nil for none. Its problems name their field.
func retryOf(in *config.ExtensionRetry, where string) (*Retry, []string) {
	if in == nil {
		return nil, nil
	}
	r := DefaultRetry
	var errs []string
	if in.MaxAttempts != 0 {
		r.MaxAttempts = in.MaxAttempts
	}
	for _, d := range []struct {
		field, v string
		to       *time.Duration
	}{{"initialBackoff", in.InitialBackoff, &r.InitialBackoff}, {"maxBackoff", in.MaxBackoff, &r.MaxBackoff}} {
		if d.v == "" {
			continue
		}
		v, err := time.ParseDuration(d.v)
		if err != nil || v <= 0 {
			errs = append(errs, fmt.Sprintf("%s.retry.%s: must be a positive duration such as 100ms, got %q", where, d.field, d.v))
		}
		*d.to = v
	}
	if in.BackoffMultiplier != 0 {
		r.BackoffMultiplier = in.BackoffMultiplier
	}
	if len(in.RetryableStatusCodes) > 0 {
		r.Codes = nil
		for _, name := range in.RetryableStatusCodes {
			var c codes.Code
			// codes.Code reads the quoted upper-case names ("UNAVAILABLE").
			if err := c.UnmarshalJSON([]byte(`"` + strings.ToUpper(name) + `"`)); err != nil || c == codes.OK {
				errs = append(errs, fmt.Sprintf("%s.retry.retryableStatusCodes: %q is not a gRPC status code other than OK (UNAVAILABLE, RESOURCE_EXHAUSTED...)", where, name))
				continue
			}
			r.Codes = append(r.Codes, c)
		}
	}
	return &r, errs
}

// validate checks the bounds gRPC puts on a retry policy.
func (r *Retry) validate(w string) []error {
	var errs []error
	if r.MaxAttempts < 2 || r.MaxAttempts > 5 {
		errs = append(errs, fmt.Errorf("%s.retry.maxAttempts: %d is not between 2 and 5 (the first call counts)", w, r.MaxAttempts))
	}
	if r.InitialBackoff <= 0 || r.MaxBackoff < r.InitialBackoff {
		errs = append(errs, fmt.Errorf("%s.retry: initialBackoff (%v) must be positive and at most maxBackoff (%v)", w, r.InitialBackoff, r.MaxBackoff))
	}
	if r.BackoffMultiplier <= 0 {
		errs = append(errs, fmt.Errorf("%s.retry.backoffMultiplier: %v is not positive", w, r.BackoffMultiplier))
	}
	if len(r.Codes) == 0 {
		errs = append(errs, fmt.Errorf("%s.retry.retryableStatusCodes: at least one", w))
	}
	return errs
}

// serviceConfig is the gRPC service configuration of the retry policy,
// for every method of the connection.
func (r *Retry) serviceConfig() string {
	names := make([]string, len(r.Codes))
	for i, c := range r.Codes {
		names[i] = codeName(c)
	}
	type policy struct {
		MaxAttempts          int      `json:"maxAttempts"`
		InitialBackoff       string   `json:"initialBackoff"`
		MaxBackoff           string   `json:"maxBackoff"`
		BackoffMultiplier    float64  `json:"backoffMultiplier"`
		RetryableStatusCodes []string `json:"retryableStatusCodes"`
	}
	sc := map[string]any{"methodConfig": []any{map[string]any{
		"name":        []any{map[string]any{}}, // every service and method
		"retryPolicy": policy{r.MaxAttempts, seconds(r.InitialBackoff), seconds(r.MaxBackoff), r.BackoffMultiplier, names},
	}}}
	b, err := json.Marshal(sc)
	if err != nil {
		panic(err) // plain values only
	}
	return string(b)
}

// seconds is a duration as the service configuration writes it.
func seconds(d time.Duration) string { return fmt.Sprintf("%.3fs", d.Seconds()) }

// codeName is a code's name as the service configuration spells it:
// "Unavailable" is UNAVAILABLE, "ResourceExhausted" RESOURCE_EXHAUSTED.
func codeName(c codes.Code) string {
	var out strings.Builder
	for i, r := range c.String() {
		if i > 0 && r >= 'A' && r <= 'Z' {
			out.WriteByte('_')
		}
		out.WriteRune(r)
	}
	return strings.ToUpper(out.String())
}
