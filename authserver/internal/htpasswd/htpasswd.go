// Package htpasswd is the authserver's HTTP Basic authentication backend.
//
// Users come from htpasswd data in Kubernetes Secrets (selected as Contour's
// authserver selects them: annotation projectcontour.io/auth-type: basic,
// projectcontour.io/auth-realm matching the realm, absent or "*", and an
// "auth" key) and from files; both are watched and every change publishes
// a new user table atomically.
//
// Passwords are bcrypt hashes; legacy formats only behind an explicit
// option. Verifications that succeeded are cached under an HMAC of (realm,
// user, password, stored hash) so that warm checks cost microseconds, not
// a bcrypt; concurrent identical verifications share one comparison; an
// unknown user costs a comparison against a dummy hash of the common cost.
package htpasswd

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
	"golang.org/x/crypto/bcrypt"

	"github.com/portcullis/portcullis/authserver/internal/check"
	"github.com/portcullis/portcullis/serverkit"
)

// Name is the backend name: the subcommand, the metrics label and the
// Auth-Handler value.
const Name = "htpasswd"

// Context keys (HTTPProxy authPolicy.context) understood by this backend.
// Keys under KeyPrefix are settings, not forwarded as Auth-Context-*.
const (
	KeyPrefix = "htpasswd.portcullis.dev/"
	RealmKey  = KeyPrefix + "realm"
)

// Headers set on the upstream request on allow (client copies removed).
const (
	UsernameHeader = "Auth-Username"
	RealmHeader    = "Auth-Realm"
	HandlerHeader  = "Auth-Handler"
)

// Defaults.
const (
	DefaultRealm     = "default"
	DefaultCacheSize = 65536
	DefaultCacheTTL  = 5 * time.Minute
)

// Options configure a Server.
type Options struct {
	// Realm is the realm of checks whose route does not set RealmKey.
	Realm string
	// StripAuthorization removes the Authorization header from allowed
	// requests, so that the upstream never sees the password.
	StripAuthorization bool
	// AllowInsecureHashes accepts {SHA}, {SSHA}, $apr1$/$1$, $5$/$6$ and
	// plain text besides bcrypt.
	AllowInsecureHashes bool
	// CacheSize bounds the number of cached successful verifications;
	// CacheTTL is how long one is trusted. Either <= 0 disables the cache.
	CacheSize int
	CacheTTL  time.Duration
	// MaxConcurrentHashes bounds the hash comparisons running at once (more
	// than the CPUs only adds latency to every check). 0 means GOMAXPROCS.
	MaxConcurrentHashes int
	// Compare is bcrypt's comparison; nil means
	// bcrypt.CompareHashAndPassword. Tests inject one to observe it.
	Compare func(hash, password []byte) error
	// Registry receives the backend's metrics; nil means none are exported.
	Registry prometheus.Registerer
	Logger   *slog.Logger
	// TracerProvider records an htpasswd.verify span per check; nil
	// means none.
	TracerProvider trace.TracerProvider
}

// Server implements envoy.service.auth.v3.Authorization.
type Server struct {
	realm   string
	opts    Options
	logger  *slog.Logger
	store   *store
	cache   *cache
	keys    *keyer
	flight  flight
	slots   chan struct{}
	compare func(hash, password []byte) error
	metrics *metrics
	tracer  trace.Tracer // nil when tracing is off

	filesMu sync.Mutex
	files   map[string][sha256.Size]byte // content hash by path
}

// New returns a Server with no users. Add sources (AddFile, WatchSecrets),
// then call Start to publish them.
func New(opts Options) (*Server, error) {
	if opts.Realm == "" {
		opts.Realm = DefaultRealm
	}
	if err := ValidRealm(opts.Realm); err != nil {
		return nil, fmt.Errorf("--auth-realm: %w", err)
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Registry == nil {
		opts.Registry = prometheus.NewRegistry()
	}
	if opts.Compare == nil {
		opts.Compare = bcrypt.CompareHashAndPassword
	}
	if opts.MaxConcurrentHashes <= 0 {
		opts.MaxConcurrentHashes = runtime.GOMAXPROCS(0)
	}
	s := &Server{
		realm:   opts.Realm,
		opts:    opts,
		logger:  opts.Logger,
		cache:   newCache(opts.CacheSize, opts.CacheTTL),
		keys:    newKeyer(),
		slots:   make(chan struct{}, opts.MaxConcurrentHashes),
		compare: opts.Compare,
	}
	if opts.TracerProvider != nil { // nil: not even a no-op span on the hot path
		s.tracer = serverkit.Tracer(opts.TracerProvider, "github.com/portcullis/portcullis/authserver/internal/htpasswd")
	}
	m, err := newMetrics(opts.Registry, s.cache)
	if err != nil {
		return nil, err
	}
	s.metrics = m
	s.store = newStore(opts.Logger, m)
	return s, nil
}

// Start publishes the users of the sources added so far; from then on every
// source change publishes a new table. Checks before Start know no user.
func (s *Server) Start() { s.store.start() }

// ReasonPassword is the reason of htpasswd's allowed answers
// (check.Note); its denials' are no_credentials and bad_credentials (an
// unknown user and a wrong password alike, as the answer).
const ReasonPassword = "password"

// Check answers 401 with a Basic challenge unless the request carries the
// credentials of a user of the route's realm.
func (s *Server) Check(ctx context.Context, req *authv3.CheckRequest) (*authv3.CheckResponse, error) {
	ext := req.GetAttributes().GetContextExtensions()
	realm, err := s.routeRealm(ext)
	if err != nil {
		s.logger.Warn("htpasswd misconfigured; denying", "error", err)
		check.SetReason(ctx, "route_context")
		return check.InternalError(), nil
	}
	authz, _ := check.RequestHeader(req, "authorization")
	name, password, ok := parseBasic(authz)
	if !ok {
		check.SetReason(ctx, "no_credentials")
		return check.Unauthorized(challenge(realm))
	}
	if !s.authenticate(ctx, realm, name, password) {
		check.SetReason(ctx, "bad_credentials")
		return check.Unauthorized(challenge(realm))
	}
	headers, err := check.ContextHeaders(ext, KeyPrefix)
	if err != nil {
		s.logger.Warn("htpasswd misconfigured; denying", "error", err)
		check.SetReason(ctx, "route_context")
		return check.InternalError(), nil
	}
	note := check.NoteFrom(ctx)
	note.Reason(ReasonPassword)
	note.User(name)
	resp, err := check.AllowWithContext(req, append([]check.Header{
		{Name: UsernameHeader, Value: name},
		{Name: RealmHeader, Value: realm},
		{Name: HandlerHeader, Value: Name},
	}, headers...))
	if err == nil && s.opts.StripAuthorization {
		ok := resp.GetOkResponse()
		ok.HeadersToRemove = append(ok.HeadersToRemove, "authorization")
	}
	return resp, err
}

// Attributes of the htpasswd.verify span. The user name is set only once
// it matched: a failed attempt's name may be a password typed in the
// wrong field.
const (
	attrCacheHit = "portcullis.cache.hit"
	attrRealm    = "portcullis.htpasswd.realm"
	attrUser     = "enduser.id"
)

// authenticate verifies name and password in realm, in an htpasswd.verify
// span when tracing is on.
func (s *Server) authenticate(ctx context.Context, realm, name, password string) bool {
	if s.tracer == nil {
		ok, _ := s.verify(ctx, realm, name, password)
		return ok
	}
	ctx, span := s.tracer.Start(ctx, "htpasswd.verify", trace.WithAttributes(attribute.String(attrRealm, realm)))
	defer span.End()
	ok, hit := s.verify(ctx, realm, name, password)
	if span.IsRecording() {
		span.SetAttributes(attribute.Bool(attrCacheHit, hit))
		if ok {
			span.SetAttributes(attribute.String(attrUser, name))
		}
	}
	return ok
}

// verify reports whether name and password match in realm, and whether
// the cache answered. An unknown user goes through the same steps as a
// known one, against the dummy hash, so both cost one comparison of the
// same cost.
func (s *Server) verify(ctx context.Context, realm, name, password string) (ok, hit bool) {
	t := s.store.table()
	cred, known := t.lookup(realm, name)
	if !known {
		cred = t.dummy
	}
	if !cred.verifiable(password) {
		return false, false // no comparison: a known user costs what an unknown one does
	}
	key := s.keys.key(realm, name, password, cred.hash)
	if s.cache.get(key) {
		s.metrics.cacheHits.Inc()
		return known, true
	}
	s.metrics.cacheMisses.Inc()
	for {
		ok, abandoned, _ := s.flight.do(key, func() (bool, bool) {
			select {
			case s.slots <- struct{}{}:
			case <-ctx.Done():
				return false, true // Envoy gave up; do not burn a bcrypt for nobody
			}
			defer func() { <-s.slots }()
			s.metrics.comparisons.Inc()
			ok := cred.matches(s.compare, password) && known // compare first: unknown users pay too
			if ok {
				s.cache.put(key) // before the flight ends: no gap for a second comparison
			}
			return ok, false
		})
		// A flight whose caller gave up answered nothing: a waiter that is
		// still wanted runs its own instead of taking that as a refusal.
		if !abandoned || ctx.Err() != nil {
			return ok, false
		}
	}
}

// routeRealm is the realm of a check: the route's RealmKey or the default.
func (s *Server) routeRealm(ext map[string]string) (string, error) {
	for k := range ext {
		if strings.HasPrefix(k, KeyPrefix) && k != RealmKey {
			return "", fmt.Errorf("unknown context key %q", k)
		}
	}
	realm, set := ext[RealmKey]
	if !set {
		return s.realm, nil
	}
	if err := ValidRealm(realm); err != nil {
		return "", fmt.Errorf("context key %s: %w", RealmKey, err)
	}
	return realm, nil
}

// ValidRealm accepts what fits in the quoted realm of a challenge and in a
// header value: 1 to 256 bytes of UTF-8 without control characters, '"' or
// '\'. "*" is reserved (it means every realm on a Secret).
func ValidRealm(realm string) error {
	switch {
	case realm == "":
		return errors.New("empty realm")
	case realm == AllRealms:
		return errors.New(`"*" is not a realm (on a Secret it means every realm)`)
	case len(realm) > 256:
		return errors.New("realm longer than 256 bytes")
	case !utf8.ValidString(realm):
		return errors.New("realm is not UTF-8")
	case strings.ContainsFunc(realm, func(r rune) bool { return unicode.IsControl(r) || r == '"' || r == '\\' }):
		return errors.New(`realm contains a control character, '"' or '\'`)
	}
	return nil
}

func challenge(realm string) string {
	return `Basic realm="` + realm + `", charset="UTF-8"`
}
