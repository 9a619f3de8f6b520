package htpasswd

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"golang.org/x/crypto/bcrypt"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
)

func TestCheckAllowsAndDenies(t *testing.T) {
	s, _, _ := newServer(t, Options{Realm: "staff"}, "alice:"+bcryptHash(t, "secret", bcrypt.MinCost)+"\n")
	challenge := `Basic realm="staff", charset="UTF-8"`
	for _, tc := range []struct {
		name          string
		authorization string
		raw           map[string]string
		want          int
	}{
		{"no credentials", "", nil, 401},
		{"right password", basic("alice", "secret"), nil, 200},
		{"wrong password", basic("alice", "Secret"), nil, 401},
		{"unknown user", basic("mallory", "secret"), nil, 401},
		{"other scheme", "Bearer abc", nil, 401},
		{"garbage", "Basic %%%", nil, 401},
		{"not UTF-8", "Basic " + base64Std("alice:\xff\xfe"), nil, 401},
		{"oversized", basic("alice", strings.Repeat("s", 8192)), nil, 401},
		{"user with a colon", basic("alice:secret", ""), nil, 401},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := doCheck(t, s, checkReq(tc.authorization, nil, nil))
			if a.status != tc.want {
				t.Fatalf("status = %d, want %d", a.status, tc.want)
			}
			if tc.want == 401 && a.headers["WWW-Authenticate"] != challenge {
				t.Errorf("WWW-Authenticate = %q, want %q", a.headers["WWW-Authenticate"], challenge)
			}
			if tc.want == 200 {
				for k, v := range map[string]string{"Auth-Username": "alice", "Auth-Realm": "staff", "Auth-Handler": "htpasswd"} {
					if a.headers[k] != v {
						t.Errorf("%s = %q, want %q", k, a.headers[k], v)
					}
				}
			}
		})
	}
}

func TestHeaderHygiene(t *testing.T) {
	s, _, _ := newServer(t, Options{}, "alice:"+bcryptHash(t, "secret", bcrypt.MinCost))
	a := doCheck(t, s, checkReq(basic("alice", "secret"), map[string]string{"team": "a", RealmKey: "ops"}, map[string]string{
		"auth-username": "admin", "auth_username": "admin", "auth-realm": "forged", "auth_realm": "forged",
		"auth_handler": "forged", "auth_context_team": "forged", "x-auth-username": "unrelated",
		"auth-context-role": "admin", // a key this route does not have: the upstream must not see it
	}))
	if a.status != 200 {
		t.Fatalf("status %d", a.status)
	}
	want := map[string]string{"Auth-Username": "alice", "Auth-Realm": "ops", "Auth-Handler": "htpasswd", "Auth-Context-Team": "a"}
	for k, v := range want {
		if a.headers[k] != v {
			t.Errorf("%s = %q, want %q (overwrites the client's copy)", k, a.headers[k], v)
		}
	}
	if len(a.headers) != len(want) {
		t.Errorf("upstream headers = %v; the realm setting must not be forwarded", a.headers)
	}
	if wantRemove := []string{"auth-context-role", "auth_context_team", "auth_handler", "auth_realm", "auth_username"}; !slices.Equal(a.remove, wantRemove) {
		t.Errorf("headers_to_remove = %v, want %v", a.remove, wantRemove)
	}
}

func TestStripAuthorization(t *testing.T) {
	users := "alice:" + bcryptHash(t, "secret", bcrypt.MinCost)
	for _, strip := range []bool{false, true} {
		s, _, _ := newServer(t, Options{StripAuthorization: strip}, users)
		a := doCheck(t, s, checkReq(basic("alice", "secret"), nil, nil))
		if a.status != 200 || slices.Contains(a.remove, "authorization") != strip {
			t.Errorf("StripAuthorization=%v: status %d, headers_to_remove %v", strip, a.status, a.remove)
		}
	}
}

func TestRouteRealm(t *testing.T) {
	s, _, _ := newServer(t, Options{}, "alice:"+bcryptHash(t, "secret", bcrypt.MinCost))
	for _, tc := range []struct {
		ext       map[string]string
		want      int
		challenge string
	}{
		{nil, 401, `Basic realm="default", charset="UTF-8"`},
		{map[string]string{RealmKey: "Team Ops"}, 401, `Basic realm="Team Ops", charset="UTF-8"`},
		{map[string]string{RealmKey: `a"b`}, 500, ""},
		{map[string]string{RealmKey: "*"}, 500, ""},
		{map[string]string{RealmKey: ""}, 500, ""},
		{map[string]string{KeyPrefix + "relm": "typo"}, 500, ""},
		{map[string]string{"k": "bad\r\nvalue"}, 401, `Basic realm="default", charset="UTF-8"`},
	} {
		a := doCheck(t, s, checkReq("", tc.ext, nil))
		if a.status != tc.want || a.headers["WWW-Authenticate"] != tc.challenge {
			t.Errorf("%v: %d %q, want %d %q", tc.ext, a.status, a.headers["WWW-Authenticate"], tc.want, tc.challenge)
		}
	}
	// A context value that cannot be a header fails closed on allow.
	if a := doCheck(t, s, checkReq(basic("alice", "secret"), map[string]string{"k": "bad\r\nvalue"}, nil)); a.status != 500 {
		t.Errorf("unsafe context value on allow: %d, want 500", a.status)
	}
}

func secret(ns, name string, annotations map[string]string, data map[string]string) *corev1.Secret {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Annotations: annotations}, Data: map[string][]byte{}}
	for k, v := range data {
		s.Data[k] = []byte(v)
	}
	return s
}

func TestSecretSelection(t *testing.T) {
	basicType := map[string]string{AuthTypeAnnotation: "basic"}
	withRealm := func(r string) map[string]string {
		return map[string]string{AuthTypeAnnotation: "basic", AuthRealmAnnotation: r}
	}
	auth := map[string]string{"auth": "u:x"}
	for _, tc := range []struct {
		name      string
		sec       *corev1.Secret
		wantRealm string
		ok        bool
	}{
		{"basic, no realm", secret("a", "s", basicType, auth), AllRealms, true},
		{"basic, realm *", secret("a", "s", withRealm("*"), auth), AllRealms, true},
		{"basic, one realm", secret("a", "s", withRealm("ops"), auth), "ops", true},
		{"not annotated", secret("a", "s", nil, auth), "", false},
		{"other auth type", secret("a", "s", map[string]string{AuthTypeAnnotation: "digest"}, auth), "", false},
		{"no auth key", secret("a", "s", basicType, map[string]string{"htpasswd": "u:x"}), "", false},
	} {
		realm, _, ok := selectSecret(tc.sec)
		if ok != tc.ok || realm != tc.wantRealm {
			t.Errorf("%s: %q %v, want %q %v", tc.name, realm, ok, tc.wantRealm, tc.ok)
		}
	}
	trimmed, _ := trimSecret(secret("a", "s", basicType, map[string]string{"auth": "u:x", "tls.key": "PRIVATE"}))
	if d := trimmed.(*corev1.Secret).Data; len(d) != 1 || string(d["auth"]) != "u:x" {
		t.Errorf("trimSecret kept %v", d)
	}
}

// TestSecretsAndRealms feeds Secret events as the informer delivers them.
func TestSecretsAndRealms(t *testing.T) {
	s, reg, _ := newServer(t, Options{})
	h := func(pw string) string { return bcryptHash(t, pw, bcrypt.MinCost) }
	s.secretChanged(secret("ns", "ops", map[string]string{AuthTypeAnnotation: "basic", AuthRealmAnnotation: "ops"},
		map[string]string{"auth": "olga:" + h("o") + "\nbad line\n"}))
	s.secretChanged(secret("ns", "everyone", map[string]string{AuthTypeAnnotation: "basic"},
		map[string]string{"auth": "eve:" + h("e") + "\nolga:" + h("wildcard")}))
	s.secretChanged(secret("ns", "ignored", nil, map[string]string{"auth": "ivan:" + h("i")}))

	ops := map[string]string{RealmKey: "ops"}
	for _, tc := range []struct {
		ext            map[string]string
		user, password string
		want           int
	}{
		{ops, "olga", "o", 200},
		{ops, "olga", "wildcard", 401}, // the realm's own entry wins
		{nil, "olga", "o", 401},        // ops users are not in the default realm
		{nil, "olga", "wildcard", 200}, // ...but the all-realms entry is
		{ops, "eve", "e", 200},
		{nil, "eve", "e", 200},
		{nil, "ivan", "i", 401},
	} {
		if a := doCheck(t, s, checkReq(basic(tc.user, tc.password), tc.ext, nil)); a.status != tc.want {
			t.Errorf("%s/%s in %v: %d, want %d", tc.user, tc.password, tc.ext, a.status, tc.want)
		}
	}
	if got := testutil.ToFloat64(s.metrics.users); got != 3 {
		t.Errorf("users gauge = %v, want 3", got)
	}
	if got := testutil.ToFloat64(s.metrics.skipped); got != 1 {
		t.Errorf("skipped_lines gauge = %v, want 1", got)
	}
	if got := testutil.ToFloat64(s.metrics.loadErrors.WithLabelValues(reasonMalformed)); got != 1 {
		t.Errorf("load_errors_total{malformed_line} = %v, want 1", got)
	}

	// The annotation goes away: the Secret is no longer used.
	s.secretChanged(secret("ns", "ops", nil, map[string]string{"auth": "olga:" + h("o")}))
	if a := doCheck(t, s, checkReq(basic("olga", "o"), ops, nil)); a.status != 401 {
		t.Errorf("olga after unselecting her Secret: %d", a.status)
	}
	// Deletion, also as a tombstone.
	s.secretDeleted(toolscache.DeletedFinalStateUnknown{Key: "ns/everyone", Obj: secret("ns", "everyone", nil, nil)})
	if a := doCheck(t, s, checkReq(basic("eve", "e"), nil, nil)); a.status != 401 {
		t.Errorf("eve after deleting her Secret: %d", a.status)
	}
	_ = reg
}

// countingCompare records the bcrypt cost of every comparison.
type countingCompare struct {
	mu    sync.Mutex
	costs []int
}

func (c *countingCompare) compare(hash, password []byte) error {
	cost, err := bcrypt.Cost(hash)
	if err != nil {
		return err
	}
	c.mu.Lock()
	c.costs = append(c.costs, cost)
	c.mu.Unlock()
	return bcrypt.CompareHashAndPassword(hash, password)
}

func (c *countingCompare) take() []int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.costs
	c.costs = nil
	return out
}

// TestTimingParity proves that an unknown user costs one bcrypt comparison
// of the cost most users have, as a wrong password does.
func TestTimingParity(t *testing.T) {
	var cmp countingCompare
	s, _, _ := newServer(t, Options{Compare: cmp.compare},
		"a:"+bcryptHash(t, "pa", 5)+"\nb:"+bcryptHash(t, "pb", 5)+"\nc:"+bcryptHash(t, "pc", 4))
	for _, tc := range []struct {
		name, user, password string
		wantCosts            []int
	}{
		{"wrong password", "a", "nope", []int{5}},
		{"unknown user", "zed", "nope", []int{5}},
		{"unknown user again (failures are not cached)", "zed", "nope", []int{5}},
		{"right password", "a", "pa", []int{5}},
		{"right password, cached", "a", "pa", nil},
		{"wrong password after a success", "a", "nope", []int{5}},
	} {
		if a := doCheck(t, s, checkReq(basic(tc.user, tc.password), nil, nil)); (a.status == 200) != (tc.password == "pa") {
			t.Errorf("%s: status %d", tc.name, a.status)
		}
		if got := cmp.take(); !slices.Equal(got, tc.wantCosts) {
			t.Errorf("%s: comparisons at costs %v, want %v", tc.name, got, tc.wantCosts)
		}
	}
}

func TestCacheKeying(t *testing.T) {
	k := newKeyer()
	base := k.key("realm", "user", "password", "hash")
	if k.key("realm", "user", "password", "hash") != base {
		t.Fatal("the key is not deterministic")
	}
	for _, other := range [][4]string{
		{"realm2", "user", "password", "hash"},
		{"realm", "user2", "password", "hash"},
		{"realm", "user", "password2", "hash"},
		{"realm", "user", "password", "hash2"},
		{"realmuser", "", "password", "hash"}, // length prefixes keep fields apart
		{"realm", "userpassword", "", "hash"},
	} {
		if k.key(other[0], other[1], other[2], other[3]) == base {
			t.Errorf("%q has the same key as the base tuple", other)
		}
	}
	if newKeyer().key("realm", "user", "password", "hash") == base {
		t.Error("two processes derive the same key: the HMAC key is not random")
	}
}

func TestCacheBoundsAndTTL(t *testing.T) {
	c := newCache(cacheShards*2, time.Minute)
	now := time.Unix(1000, 0)
	c.now = func() time.Time { return now }
	k := newKeyer()
	for i := range 10 * cacheShards {
		c.put(k.key("r", fmt.Sprint(i), "p", "h"))
	}
	if n := c.len(); n > cacheShards*2 {
		t.Errorf("cache holds %d entries, bound %d", n, cacheShards*2)
	}
	fresh := k.key("r", "fresh", "p", "h")
	c.put(fresh)
	if !c.get(fresh) {
		t.Fatal("a fresh entry is missing")
	}
	now = now.Add(time.Minute)
	if c.get(fresh) {
		t.Error("an entry outlived its TTL")
	}
	if newCache(0, time.Minute) != nil || newCache(10, 0) != nil {
		t.Error("size 0 or TTL 0 should disable the cache")
	}
	var disabled *cache
	disabled.put(fresh)
	if disabled.get(fresh) || disabled.len() != 0 {
		t.Error("a disabled cache remembered something")
	}
}

// TestPasswordChangeInvalidates rotates a user's password in the file: the
// cached verification of the old password must not survive.
func TestPasswordChangeInvalidates(t *testing.T) {
	var cmp countingCompare
	s, _, paths := newServer(t, Options{Compare: cmp.compare}, "alice:"+bcryptHash(t, "old", bcrypt.MinCost))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go s.WatchFiles(ctx, 20*time.Millisecond)

	for range 2 {
		if a := doCheck(t, s, checkReq(basic("alice", "old"), nil, nil)); a.status != 200 {
			t.Fatalf("old password before rotation: %d", a.status)
		}
	}
	if got := cmp.take(); len(got) != 1 {
		t.Fatalf("two checks ran %d comparisons, want 1 (the second is a cache hit)", len(got))
	}
	writeFile(t, paths[0], "alice:"+bcryptHash(t, "new", bcrypt.MinCost))
	eventually(t, func() error {
		if a := doCheck(t, s, checkReq(basic("alice", "new"), nil, nil)); a.status != 200 {
			return fmt.Errorf("new password: %d", a.status)
		}
		return nil
	})
	if a := doCheck(t, s, checkReq(basic("alice", "old"), nil, nil)); a.status != 401 {
		t.Errorf("old password after rotation: %d, want 401", a.status)
	}
}

// TestSingleflight: N concurrent checks of the same uncached credentials
// run one comparison.
func TestSingleflight(t *testing.T) {
	release := make(chan struct{})
	var calls atomic.Int32
	s, _, _ := newServer(t, Options{Compare: func(hash, password []byte) error {
		calls.Add(1)
		<-release
		return bcrypt.CompareHashAndPassword(hash, password)
	}}, "alice:"+bcryptHash(t, "secret", bcrypt.MinCost))
	const n = 16
	var wg sync.WaitGroup
	statuses := make([]int, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			statuses[i] = doCheck(t, s, checkReq(basic("alice", "secret"), nil, nil)).status
		}()
	}
	// Wait until one comparison runs and the others wait for it.
	eventually(t, func() error {
		if calls.Load() != 1 {
			return fmt.Errorf("%d comparisons started", calls.Load())
		}
		s.flight.mu.Lock()
		defer s.flight.mu.Unlock()
		if len(s.flight.calls) != 1 {
			return fmt.Errorf("%d flights", len(s.flight.calls))
		}
		return nil
	})
	close(release)
	wg.Wait()
	for i, st := range statuses {
		if st != 200 {
			t.Errorf("check %d: %d", i, st)
		}
	}
	if c := calls.Load(); c != 1 {
		t.Errorf("%d concurrent identical checks ran %d comparisons", n, c)
	}
}

// TestNoGlobalLock: comparisons for different requests run at the same
// time. The comparer blocks until two are inside it at once; with a global
// lock the second could never enter and the test would time out.
func TestNoGlobalLock(t *testing.T) {
	var inside atomic.Int32
	both := make(chan struct{})
	var once sync.Once
	s, _, _ := newServer(t, Options{MaxConcurrentHashes: 2, Compare: func(hash, password []byte) error {
		if inside.Add(1) == 2 {
			once.Do(func() { close(both) })
		}
		select {
		case <-both:
		case <-time.After(30 * time.Second):
			return fmt.Errorf("alone in the comparer")
		}
		return bcrypt.CompareHashAndPassword(hash, password)
	}}, "alice:"+bcryptHash(t, "a", bcrypt.MinCost)+"\nbob:"+bcryptHash(t, "b", bcrypt.MinCost))
	var wg sync.WaitGroup
	results := make([]int, 2)
	for i, u := range []string{"alice", "bob"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = doCheck(t, s, checkReq(basic(u, u[:1]), nil, nil)).status
		}()
	}
	wg.Wait()
	if results[0] != 200 || results[1] != 200 {
		t.Fatalf("results %v: the two comparisons did not run concurrently", results)
	}
}

// TestAtomicReload checks continuously while the file is rewritten many
// times (the user's hash changes each time, the password does not): no
// check may fail during a swap.
func TestAtomicReload(t *testing.T) {
	s, reg, paths := newServer(t, Options{}, "alice:"+bcryptHash(t, "secret", bcrypt.MinCost))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go s.WatchFiles(ctx, 5*time.Millisecond)

	stop := make(chan struct{})
	var failures, checks atomic.Int64
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				checks.Add(1)
				if doCheck(t, s, checkReq(basic("alice", "secret"), nil, nil)).status != 200 {
					failures.Add(1)
				}
			}
		}()
	}
	reloads := func() float64 { return testutil.ToFloat64(s.metrics.reloads) }
	start := reloads()
	for i := range 20 {
		writeFile(t, paths[0], fmt.Sprintf("alice:%s\nuser%d:%s\n", bcryptHash(t, "secret", bcrypt.MinCost), i, bcryptHash(t, "x", bcrypt.MinCost)))
		want := start + float64(i+1)
		eventually(t, func() error {
			if got := reloads(); got < want {
				return fmt.Errorf("reloads %v, want %v", got, want)
			}
			return nil
		})
	}
	close(stop)
	wg.Wait()
	if f := failures.Load(); f != 0 {
		t.Fatalf("%d of %d checks failed during reloads", f, checks.Load())
	}
	_ = reg
}

func TestFileProblems(t *testing.T) {
	s, reg, paths := newServer(t, Options{}, "alice:"+hashSHA+"\nbob:"+bcryptHash(t, "b", bcrypt.MinCost))
	if a := doCheck(t, s, checkReq(basic("bob", "b"), nil, nil)); a.status != 200 {
		t.Errorf("bob (good line beside a bad one): %d", a.status)
	}
	if a := doCheck(t, s, checkReq(basic("alice", "password"), nil, nil)); a.status != 401 {
		t.Errorf("alice with a {SHA} hash and no --allow-insecure-hashes: %d", a.status)
	}
	for _, want := range []string{
		`portcullis_authserver_htpasswd_load_errors_total{reason="insecure_hash"} 1`,
		`portcullis_authserver_htpasswd_users 1`,
		`portcullis_authserver_htpasswd_skipped_lines 1`,
	} {
		if !strings.Contains(gather(t, reg), want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	if err := s.AddFile(paths[0] + ".missing"); err == nil {
		t.Error("AddFile accepted a missing file")
	}
}

func gather(t *testing.T, reg *prometheus.Registry) string {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
			}
			name := mf.GetName()
			if len(labels) > 0 {
				name += "{" + strings.Join(labels, ",") + "}"
			}
			v := m.GetGauge().GetValue() + m.GetCounter().GetValue()
			fmt.Fprintf(&b, "%s %v\n", name, v)
		}
	}
	return b.String()
}

func eventually(t *testing.T, f func() error) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestNoCredentialsInLogs: neither passwords, nor hashes, nor the content
// of bad lines reach the log, at any level.
func TestNoCredentialsInLogs(t *testing.T) {
	var logs strings.Builder
	var mu sync.Mutex
	logger := slog.New(slog.NewJSONHandler(writerFunc(func(p []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		return logs.Write(p)
	}), &slog.HandlerOptions{Level: slog.LevelDebug}))
	bc := bcryptHash(t, "CorrectHorse", bcrypt.MinCost)
	s, _, _ := newServer(t, Options{Logger: logger},
		"alice:"+bc+"\nbob:"+hashSHA+"\nmalformed-PlainSecretLine\ncarol:{PLAIN}PlainTextSecret\n")
	for _, c := range []string{basic("alice", "CorrectHorse"), basic("alice", "WrongStaple"), basic("mallory", "GuessBattery"), "Basic %%%PoisonValue"} {
		doCheck(t, s, checkReq(c, map[string]string{RealmKey: `bad"realm`}, nil))
		doCheck(t, s, checkReq(c, nil, nil))
	}
	mu.Lock()
	out := logs.String()
	mu.Unlock()
	if !strings.Contains(out, "htpasswd line skipped") || !strings.Contains(out, "misconfigured") {
		t.Fatalf("expected load and misconfiguration logs, got:\n%s", out)
	}
	for _, secret := range []string{"CorrectHorse", "WrongStaple", "GuessBattery", "PoisonValue", "PlainSecretLine", "PlainTextSecret",
		bc, hashSHA, base64Std("alice:CorrectHorse")} {
		if strings.Contains(out, secret) {
			t.Errorf("log contains %q:\n%s", secret, out)
		}
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// TestSingleflightLeaderGivesUp: the first of two identical checks waits
// for a comparison slot, then its caller (Envoy) gives up. The second
// check, still wanted, must not inherit that "no" as a wrong password: it
// runs the comparison itself and is allowed.
func TestSingleflightLeaderGivesUp(t *testing.T) {
	bobIn, release := make(chan struct{}), make(chan struct{})
	s, _, _ := newServer(t, Options{MaxConcurrentHashes: 1, Compare: func(hash, password []byte) error {
		if string(password) == "b" { // bob holds the only slot until released
			close(bobIn)
			<-release
		}
		return bcrypt.CompareHashAndPassword(hash, password)
	}}, "alice:"+bcryptHash(t, "a", bcrypt.MinCost)+"\nbob:"+bcryptHash(t, "b", bcrypt.MinCost))
	bob := make(chan int)
	go func() { bob <- doCheck(t, s, checkReq(basic("bob", "b"), nil, nil)).status }()
	<-bobIn

	leaderCtx, giveUp := context.WithCancel(context.Background())
	leader := make(chan bool)
	go func() { leader <- s.authenticate(leaderCtx, s.realm, "alice", "a") }()
	eventually(t, func() error { // the leader's flight waits for the slot
		s.flight.mu.Lock()
		defer s.flight.mu.Unlock()
		if len(s.flight.calls) != 2 {
			return fmt.Errorf("%d flights", len(s.flight.calls))
		}
		return nil
	})
	follower := make(chan bool)
	go func() { follower <- s.authenticate(context.Background(), s.realm, "alice", "a") }()
	eventually(t, func() error { // the follower waits on the leader's flight
		s.flight.mu.Lock()
		defer s.flight.mu.Unlock()
		for _, c := range s.flight.calls {
			if c.waiters == 1 {
				return nil
			}
		}
		return fmt.Errorf("no follower yet")
	})
	giveUp()
	if <-leader {
		t.Error("the check whose caller gave up was allowed")
	}
	close(release)
	if !<-follower {
		t.Error("the follower got the abandoned leader's refusal")
	}
	if st := <-bob; st != 200 {
		t.Errorf("bob: %d", st)
	}
}

// TestPasswordsBcryptCannotVerify: bcrypt reads 72 bytes of a password and
// ignores the rest, so a password longer than that is refused rather than
// matched on its prefix, without a comparison for known and unknown users
// alike (the answer and its cost do not tell whether the user exists).
func TestPasswordsBcryptCannotVerify(t *testing.T) {
	p72 := strings.Repeat("é", 36) // 72 bytes in 36 characters: the limit counts bytes
	long := strings.Repeat("l", 100)
	var cmp countingCompare
	s, _, _ := newServer(t, Options{Compare: cmp.compare, AllowInsecureHashes: true},
		"alice:"+bcryptHash(t, p72, bcrypt.MinCost)+"\n"+
			"legacy:{PLAIN}"+long+"\n")
	for _, tc := range []struct {
		name, user, password string
		want                 int
		comparisons          int
	}{
		{"72 bytes, the whole password", "alice", p72, 200, 1},
		{"72 bytes plus one", "alice", p72 + "x", 401, 0},
		{"72 bytes plus anything", "alice", p72 + "-whatever-the-client-adds", 401, 0},
		{"unknown user, 73 bytes", "mallory", p72 + "x", 401, 0},
		{"unknown user, 72 bytes", "mallory", p72, 401, 1},
		{"wrong 72 bytes", "alice", strings.Repeat("q", 72), 401, 1},
		{"a format without the limit: 100 bytes", "legacy", long, 200, 0},
		{"a format without the limit: 100 bytes plus one", "legacy", long + "x", 401, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if a := doCheck(t, s, checkReq(basic(tc.user, tc.password), nil, nil)); a.status != tc.want {
				t.Errorf("status %d, want %d", a.status, tc.want)
			}
			if got := len(cmp.take()); got != tc.comparisons {
				t.Errorf("%d bcrypt comparisons, want %d", got, tc.comparisons)
			}
		})
	}
}
