package htpasswd

import (
	"crypto/rand"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"sync/atomic"

	"golang.org/x/crypto/bcrypt"
)

// AllRealms is the realm of users that apply to every realm: a Secret
// without a projectcontour.io/auth-realm annotation or with "*", and files.
const AllRealms = "*"

// table is an immutable snapshot of every user, swapped atomically on
// reload: a check sees the old table or the new one, never a mix.
type table struct {
	byRealm map[string]map[string]*credential // realm-specific users
	all     map[string]*credential            // users of every realm
	dummy   *credential                       // compared for unknown users
}

// lookup finds user in realm; a realm-specific entry wins over one for all
// realms.
func (t *table) lookup(realm, name string) (*credential, bool) {
	if c, ok := t.byRealm[realm][name]; ok {
		return c, true
	}
	c, ok := t.all[name]
	return c, ok
}

// source is one Secret or file, parsed.
type source struct {
	name  string // for logs: "Secret ns/name", "file /path"
	realm string // AllRealms or one realm
	data  parsed
}

// store holds the sources and publishes tables built from them.
type store struct {
	logger  *slog.Logger
	metrics *metrics

	mu      sync.Mutex
	sources map[string]*source // by key; keys sort files first, then Secrets
	holding bool               // before start: no rebuild per initial event
	dummies map[int]*credential

	current atomic.Pointer[table]
}

func newStore(logger *slog.Logger, m *metrics) *store {
	s := &store{logger: logger, metrics: m, sources: map[string]*source{}, holding: true, dummies: map[int]*credential{}}
	s.current.Store(&table{all: map[string]*credential{}, dummy: s.dummy(bcrypt.DefaultCost)})
	return s
}

func (s *store) table() *table { return s.current.Load() }

// set replaces (src != nil) or removes the source under key, reports its
// problems and, once started, publishes a new table.
func (s *store) set(key string, src *source) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if src == nil {
		if _, ok := s.sources[key]; !ok {
			return
		}
		delete(s.sources, key)
		s.logger.Info("htpasswd source removed", "source", key)
	} else {
		s.sources[key] = src
		s.report(src)
	}
	if !s.holding {
		s.rebuild()
	}
}

// start publishes the first table once the initial sources are loaded.
func (s *store) start() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.holding = false
	s.rebuild()
}

func (s *store) report(src *source) {
	for _, p := range src.data.problems {
		s.logger.Warn("htpasswd line skipped", "source", src.name, "line", p.line, "reason", p.reason, "error", p.msg)
		s.metrics.loadErrors.WithLabelValues(p.reason).Inc()
	}
	for _, u := range src.data.insecure {
		s.logger.Warn("user has an insecure password hash, accepted because of --allow-insecure-hashes; rehash it with bcrypt (htpasswd -B)",
			"source", src.name, "user", u.name, "format", u.cred.format)
	}
	s.logger.Info("htpasswd source loaded", "source", src.name, "realm", src.realm,
		"users", len(src.data.users), "skipped_lines", len(src.data.problems))
}

// rebuild merges every source into a new table and publishes it. Sources
// are merged in key order; the first definition of a user in a realm scope
// wins and later ones are reported.
func (s *store) rebuild() {
	t := &table{byRealm: map[string]map[string]*credential{}, all: map[string]*credential{}}
	users, skipped := 0, 0
	costs := map[int]int{}
	for _, key := range slices.Sorted(maps.Keys(s.sources)) {
		src := s.sources[key]
		skipped += len(src.data.problems)
		scope := t.all
		if src.realm != AllRealms {
			if t.byRealm[src.realm] == nil {
				t.byRealm[src.realm] = map[string]*credential{}
			}
			scope = t.byRealm[src.realm]
		}
		for _, u := range src.data.users {
			if _, dup := scope[u.name]; dup {
				s.logger.Warn("user defined in several sources for the same realm; the first source is used",
					"user", u.name, "realm", src.realm, "ignored_source", src.name)
				s.metrics.loadErrors.WithLabelValues(reasonDuplicate).Inc()
				continue
			}
			scope[u.name] = u.cred
			users++
			if u.cred.format == FormatBcrypt {
				costs[u.cred.cost]++
			}
		}
	}
	t.dummy = s.dummy(commonCost(costs))
	s.current.Store(t)
	s.metrics.users.Set(float64(users))
	s.metrics.sources.Set(float64(len(s.sources)))
	s.metrics.skipped.Set(float64(skipped))
	s.metrics.reloads.Inc()
}

// commonCost is the bcrypt cost most users have (the higher on a tie), so
// that an unknown user costs what most known users cost.
func commonCost(costs map[int]int) int {
	best, n := bcrypt.DefaultCost, 0
	for c, k := range costs {
		if k > n || (k == n && c > best) {
			best, n = c, k
		}
	}
	return best
}

// dummy is a bcrypt hash of a random password at cost: comparing an
// unknown user's password against it costs what a known user's costs, so
// response times do not tell which users exist.
func (s *store) dummy(cost int) *credential {
	if d, ok := s.dummies[cost]; ok {
		return d
	}
	hash, err := bcrypt.GenerateFromPassword([]byte(rand.Text()), cost)
	if err != nil {
		panic(err) // cost comes from a hash bcrypt.Cost accepted
	}
	d := &credential{hash: string(hash), format: FormatBcrypt, cost: cost}
	s.dummies[cost] = d
	return d
}
