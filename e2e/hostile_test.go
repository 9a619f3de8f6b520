package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/e2e/harness"
	"github.com/portcullis/portcullis/e2e/loadgen"
)

// Fault test 7 of issue 17: malformed or hostile input does not take the
// control plane down.
const (
	hostileNS = "hostile"
	// invalidObjects are created at once.
	invalidObjects = 10000
	// flapFor is how long objects flap, one operation every flapEvery.
	flapFor   = 15 * time.Second
	flapEvery = 100 * time.Millisecond
	// bigObject is the size of the large HTTPProxy (JSON): the API server
	// sends etcd no request over 2 MiB (its etcd client's limit), the
	// object's metadata included; etcd's own limit (1.5 MiB by default) is
	// raised for it.
	bigObject = 2<<20 - 64<<10
	// rssBound: portcullis's peak RSS through the whole test.
	rssBound = 1 << 30
)

// invalidKinds are the ways the hostile objects are invalid, each with the
// Valid condition's reason portcullis must write.
var invalidKinds = []struct {
	reason string
	proxy  func(i int) *contourv1.HTTPProxy
}{
	{"ServiceUnresolvedReference", func(i int) *contourv1.HTTPProxy {
		return hostileRoot(i, contourv1.Route{Services: []contourv1.Service{{Name: "no-such-service", Port: 80}}})
	}},
	{"SecretNotValid", func(i int) *contourv1.HTTPProxy {
		p := hostileRoot(i, contourv1.Route{Services: []contourv1.Service{{Name: "echo", Port: 80}}})
		p.Spec.VirtualHost.TLS = &contourv1.TLS{SecretName: "no-such-secret"}
		return p
	}},
	{"IncludeNotFound", func(i int) *contourv1.HTTPProxy {
		p := hostileRoot(i)
		p.Spec.Includes = []contourv1.Include{{Name: "no-such-child", Conditions: []contourv1.MatchCondition{{Prefix: "/child"}}}}
		return p
	}},
	{"UnsupportedField", func(i int) *contourv1.HTTPProxy {
		// A headers policy on a TCP proxy's service is refused: there are
		// no HTTP requests to set headers on.
		p := hostileRoot(i)
		p.Spec.VirtualHost.TLS = &contourv1.TLS{Passthrough: true}
		p.Spec.TCPProxy = &contourv1.TCPProxy{Services: []contourv1.Service{{Name: "echo", Port: 80,
			RequestHeadersPolicy: &contourv1.HeadersPolicy{Set: []contourv1.HeaderValue{{Name: "x-a", Value: "b"}}}}}}
		return p
	}},
	{"PathMatchConditionsNotValid", func(i int) *contourv1.HTTPProxy {
		return hostileRoot(i, contourv1.Route{Conditions: []contourv1.MatchCondition{{Regex: "/(unclosed"}},
			Services: []contourv1.Service{{Name: "echo", Port: 80}}})
	}},
}

func hostileRoot(i int, routes ...contourv1.Route) *contourv1.HTTPProxy {
	return &contourv1.HTTPProxy{ObjectMeta: metav1.ObjectMeta{Namespace: hostileNS, Name: fmt.Sprintf("bad-%d", i)},
		Spec: contourv1.HTTPProxySpec{VirtualHost: &contourv1.VirtualHost{Fqdn: fmt.Sprintf("bad-%d.example.com", i)}, Routes: routes}}
}

// steadyLoad is the load generator on the valid route, with the longest
// time between two successful requests.
type steadyLoad struct {
	mu     sync.Mutex
	lastOK time.Time
	gap    time.Duration
	result chan loadgen.Result
	cancel context.CancelFunc
}

func startSteadyLoad(httpAddr, url string) *steadyLoad {
	ctx, cancel := context.WithCancel(context.Background())
	l := &steadyLoad{lastOK: time.Now(), result: make(chan loadgen.Result, 1), cancel: cancel}
	c := harness.HTTPClient(httpAddr)
	go func() {
		// Bounded: the test cancels it long before.
		l.result <- loadgen.Run(ctx, "valid route", loadgen.Config{Concurrency: 4, Duration: 15 * time.Minute}, func(ctx context.Context, _ int) error {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
			if err != nil {
				return err
			}
			resp, err := c.Do(req)
			if err != nil {
				return err
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				return fmt.Errorf("status %d", resp.StatusCode)
			}
			now := time.Now()
			l.mu.Lock()
			l.gap = max(l.gap, now.Sub(l.lastOK))
			l.lastOK = now
			l.mu.Unlock()
			return nil
		})
	}()
	return l
}

func (l *steadyLoad) stop() (loadgen.Result, time.Duration) {
	l.cancel()
	r := <-l.result
	l.mu.Lock()
	defer l.mu.Unlock()
	return r, l.gap
}

// procStatus reads a size field (VmRSS, VmHWM) of /proc/<pid>/status.
func procStatus(t *testing.T, pid int, field string) int64 {
	t.Helper()
	v, err := harness.ProcStatus(pid, field)
	if err != nil {
		t.Fatalf("portcullis (pid %d): %v", pid, err)
	}
	return v
}

// TestHostileInput: under steady load on a valid route through the real
// Envoy, 10,000 invalid HTTPProxies created at once, objects flapping
// (created, updated, deleted) every 100 ms, and a 2 MiB HTTPProxy do not
// take portcullis down: the valid route is served throughout with no
// failed request, every invalid object gets its condition, the flapping
// settles to the last state, the large object is served, and portcullis's
// memory stays bounded.
func TestHostileInput(t *testing.T) {
	api := harness.StartAPIServerWith(t, harness.APIServerOptions{EtcdMaxRequestBytes: 4 << 20}, harness.CRDDirs(t)...)
	portcullisBin := harness.BuildBinary(t, "github.com/portcullis/portcullis/controlplane/cmd/portcullis")
	httpAddr, xds, admin := harness.FreeAddr(t), harness.FreeAddr(t), harness.FreeAddr(t)
	cp := harness.StartProcess(t, "portcullis", portcullisBin, "serve", "--provider", "kubernetes", "--kubeconfig", api.KubeconfigPath,
		"--enable-external-name-services", "--allow-loopback-external-names",
		"--xds-address", xds, "--admin-address", admin, "--envoy-http-address", httpAddr, "--envoy-https-address", harness.FreeAddr(t))
	bootstrap := filepath.Join(t.TempDir(), "envoy.json")
	if out, err := harness.RunCommand(portcullisBin, "bootstrap", "--xds-address", xds, "--envoy-admin-address", harness.FreeAddr(t), "-o", bootstrap); err != nil {
		t.Fatalf("portcullis bootstrap: %v\n%s", err, out)
	}
	harness.StartEnvoy(t, bootstrap)
	echo := harness.StartEcho(t, "echo")
	ctx := context.Background()
	k := &kubeControlPlane{api: api, httpAddr: httpAddr}
	k.apply(t, namespaces(hostileNS)...)
	k.apply(t, harness.LoopbackExternalName(hostileNS, "echo", 80, echo.Port)...)
	k.apply(t, &contourv1.HTTPProxy{ObjectMeta: metav1.ObjectMeta{Namespace: hostileNS, Name: "hostile-child"}, Spec: contourv1.HTTPProxySpec{
		Routes: []contourv1.Route{{Services: []contourv1.Service{{Name: "echo", Port: 80}}}},
	}})
	k.apply(t, &contourv1.HTTPProxy{ObjectMeta: metav1.ObjectMeta{Namespace: hostileNS, Name: "valid"}, Spec: contourv1.HTTPProxySpec{
		VirtualHost: &contourv1.VirtualHost{Fqdn: "valid.example.com"},
		Routes:      []contourv1.Route{{Services: []contourv1.Service{{Name: "echo", Port: 80}}}},
	}})
	c := harness.HTTPClient(httpAddr)
	harness.EventuallyStatus(t, c, "http://valid.example.com/", http.StatusOK)
	pid := cp.Pid()
	rssBefore := procStatus(t, pid, "VmRSS")
	load := startSteadyLoad(httpAddr, "http://valid.example.com/")
	alive := func(t *testing.T, phase string) {
		t.Helper()
		select {
		case <-cp.Done():
			t.Fatalf("portcullis exited during %s: %v", phase, cp.ExitErr())
		default:
		}
	}
	rss := map[string]int64{}

	t.Run("10,000 invalid objects at once get their conditions", func(t *testing.T) {
		objs := make([]client.Object, invalidObjects)
		for i := range objs {
			objs[i] = invalidKinds[i%len(invalidKinds)].proxy(i)
		}
		start := time.Now()
		createAll(t, api.Client, objs)
		t.Logf("created %d invalid HTTPProxies in %v", invalidObjects, time.Since(start).Round(time.Millisecond))
		// Minutes on a loaded machine: one status update per object.
		harness.Eventually(t, 10*time.Minute, func() error {
			var list contourv1.HTTPProxyList
			if err := api.Client.List(ctx, &list, client.InNamespace(hostileNS)); err != nil {
				return err
			}
			missing, wrong := 0, []string{}
			for _, p := range list.Items {
				i, err := strconv.Atoi(strings.TrimPrefix(p.Name, "bad-"))
				if err != nil {
					continue // valid, flap-*, big
				}
				cond := p.Status.GetCondition(contourv1.ValidConditionType)
				want := invalidKinds[i%len(invalidKinds)].reason
				switch {
				case cond == nil:
					missing++
				case cond.Status != metav1.ConditionFalse || cond.Reason != want:
					if len(wrong) < 5 {
						wrong = append(wrong, fmt.Sprintf("%s: Valid %s %s, want False %s", p.Name, cond.Status, cond.Reason, want))
					}
				}
			}
			if len(wrong) > 0 {
				return errors.New(strings.Join(wrong, "; "))
			}
			if missing > 0 {
				return fmt.Errorf("%d of %d invalid HTTPProxies have no Valid condition yet", missing, invalidObjects)
			}
			return nil
		})
		t.Logf("all %d conditions written %v after the first create", invalidObjects, time.Since(start).Round(time.Millisecond))
		alive(t, "the invalid objects")
		rss["invalid"] = procStatus(t, pid, "VmRSS")
	})

	t.Run("objects flapping every 100 ms settle to their last state", func(t *testing.T) {
		tls := harness.NewCA(t, "hostile").Issue(t, "flap-tls.example.com")
		k.apply(t, tls.Secret(hostileNS, "flap-tls"), &contourv1.HTTPProxy{ObjectMeta: metav1.ObjectMeta{Namespace: hostileNS, Name: "flap-tls"}, Spec: contourv1.HTTPProxySpec{
			VirtualHost: &contourv1.VirtualHost{Fqdn: "flap-tls.example.com", TLS: &contourv1.TLS{SecretName: "flap-tls"}},
			Routes:      []contourv1.Route{{Services: []contourv1.Service{{Name: "echo", Port: 80}}}},
		}})
		// Each flapper repeats its operations, one every flapEvery, and
		// stops after a whole cycle once flapFor has passed.
		flappers := []struct {
			ops   []string
			build func(step int) client.Object
		}{
			// A valid host whose route changes; ends deleted.
			{[]string{"create", "update", "delete"}, func(step int) client.Object {
				return &contourv1.HTTPProxy{ObjectMeta: metav1.ObjectMeta{Namespace: hostileNS, Name: "flap-valid"}, Spec: contourv1.HTTPProxySpec{
					VirtualHost: &contourv1.VirtualHost{Fqdn: "flap.example.com"},
					Routes: []contourv1.Route{{Conditions: []contourv1.MatchCondition{{Prefix: fmt.Sprintf("/step-%d", step)}},
						Services: []contourv1.Service{{Name: "echo", Port: 80}}}},
				}}
			}},
			// An invalid host, invalid in a different way at each update.
			{[]string{"create", "update", "delete"}, func(step int) client.Object {
				p := invalidKinds[step%len(invalidKinds)].proxy(step)
				p.Name = "flap-invalid"
				return p
			}},
			// flap-tls's Secret, which turns it invalid and valid; ends
			// present.
			{[]string{"delete", "create", "update"}, func(int) client.Object { return tls.Secret(hostileNS, "flap-tls") }},
		}
		var wg sync.WaitGroup
		ops := make([]int, len(flappers))
		lastPath := make([]string, len(flappers))
		errs := make(chan error, len(flappers))
		deadline := time.Now().Add(flapFor)
		for f, fl := range flappers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				tick := time.NewTicker(flapEvery)
				defer tick.Stop()
				for step := 0; time.Now().Before(deadline) || step%len(fl.ops) != 0; step++ {
					<-tick.C
					obj := fl.build(step)
					var err error
					switch op := fl.ops[step%len(fl.ops)]; op {
					case "create":
						err = api.Client.Create(ctx, obj)
					case "update":
						err = api.Apply(ctx, obj)
						lastPath[f] = fmt.Sprintf("/step-%d", step)
					case "delete":
						err = api.Client.Delete(ctx, obj)
					}
					if err != nil {
						errs <- fmt.Errorf("flapper %d step %d: %w", f, step, err)
						return
					}
					ops[f]++
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		total := 0
		for _, n := range ops {
			total += n
		}
		t.Logf("%d create/update/delete operations in %v (%d objects flapping)", total, flapFor, len(flappers))
		// The last states: flap.example.com deleted after its last update
		// (whose path would answer 200 if the deletion were lost), and
		// flap-tls valid with its Secret back.
		harness.EventuallyStatus(t, c, "http://flap.example.com"+lastPath[0], http.StatusNotFound)
		k.eventuallyProxy(t, hostileNS, "flap-tls", want{status: metav1.ConditionTrue, reason: "Valid"})
		alive(t, "the flapping")
		rss["flapping"] = procStatus(t, pid, "VmRSS")
	})

	t.Run("a 2 MiB HTTPProxy (the API server's largest) is served", func(t *testing.T) {
		big := &contourv1.HTTPProxy{ObjectMeta: metav1.ObjectMeta{Namespace: hostileNS, Name: "big"}, Spec: contourv1.HTTPProxySpec{
			VirtualHost: &contourv1.VirtualHost{Fqdn: "big.example.com"},
		}}
		pad := strings.Repeat("x", 64)
		for size := 0; size < bigObject; {
			for range 100 {
				big.Spec.Routes = append(big.Spec.Routes, contourv1.Route{
					Conditions:           []contourv1.MatchCondition{{Prefix: fmt.Sprintf("/big/%06d", len(big.Spec.Routes))}},
					Services:             []contourv1.Service{{Name: "echo", Port: 80}},
					RequestHeadersPolicy: &contourv1.HeadersPolicy{Set: []contourv1.HeaderValue{{Name: "X-Pad", Value: pad}}},
				})
			}
			b, err := json.Marshal(big)
			if err != nil {
				t.Fatal(err)
			}
			size = len(b)
		}
		b, _ := json.Marshal(big)
		t.Logf("HTTPProxy big: %d routes, %d bytes of JSON", len(big.Spec.Routes), len(b))
		if err := api.Client.Create(ctx, big); err != nil {
			t.Fatalf("creating the %d-byte HTTPProxy: %v", len(b), err)
		}
		last := len(big.Spec.Routes) - 1
		harness.EventuallyStatus(t, c, fmt.Sprintf("http://big.example.com/big/%06d", last), http.StatusOK)
		k.eventuallyProxy(t, hostileNS, "big", want{status: metav1.ConditionTrue, reason: "Valid"})
		alive(t, "the large object")
		rss["large"] = procStatus(t, pid, "VmRSS")
	})

	res, gap := load.stop()
	alive(t, "the test")
	peak := procStatus(t, pid, "VmHWM")
	t.Logf("valid route under load: %d requests sent, %d failed (first: %v), longest gap between two answers %v",
		res.Requests, res.Errors, res.FirstError, gap.Round(time.Millisecond))
	t.Logf("portcullis RSS: %d MiB before, %d MiB after the invalid objects, %d MiB after the flapping, %d MiB after the large object; peak %d MiB",
		rssBefore>>20, rss["invalid"]>>20, rss["flapping"]>>20, rss["large"]>>20, peak>>20)
	if res.Requests == 0 {
		t.Error("the load generator sent no request")
	}
	if res.Errors != 0 {
		t.Errorf("%d of %d requests to the valid route failed (first: %v)", res.Errors, res.Requests, res.FirstError)
	}
	if peak > rssBound {
		t.Errorf("portcullis peak RSS %d MiB, want under %d MiB", peak>>20, rssBound>>20)
	}
}

// createAll creates objects with 32 concurrent clients.
func createAll(t *testing.T, c client.Client, objs []client.Object) {
	t.Helper()
	const workers = 32
	next := make(chan client.Object)
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for o := range next {
				if err := c.Create(context.Background(), o); err != nil {
					select {
					case errs <- fmt.Errorf("create %s: %w", o.GetName(), err):
					default:
					}
				}
			}
		}()
	}
	for _, o := range objs {
		next <- o
	}
	close(next)
	wg.Wait()
	select {
	case err := <-errs:
		t.Fatal(err)
	default:
	}
}
