package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/apis/projectcontour/v1alpha1"
	"github.com/portcullis/portcullis/e2e/harness"
)

// TestConfigFileCannotDropGlobalAuthByAccident: through the real Envoy, a
// configuration file emptied, or cut short to "globalExtAuth:" with
// nothing under it, and left so for many polls, keeps global
// authorization on (requests are still checked: the deny route answers
// 403), with the error on /status and
// portcullis_config_file_not_applied{reason="lost_section"} at 1; only
// "globalExtAuth: {disabled: true}" turns it off.
func TestConfigFileCannotDropGlobalAuthByAccident(t *testing.T) {
	st := startGlobalAuthFileStack(t)
	c, cfg, dir, httpAddr, admin, objs := st.c, st.cfg, st.dir, st.httpAddr, st.admin, st.objs
	echo := []contourv1.Service{{Name: "echo", Port: 80}}
	objs = append(objs, &contourv1.HTTPProxy{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "app"},
		Spec: contourv1.HTTPProxySpec{
			VirtualHost: &contourv1.VirtualHost{Fqdn: "app.example.com"},
			Routes: []contourv1.Route{
				{Conditions: []contourv1.MatchCondition{{Prefix: "/deny"}},
					AuthPolicy: &contourv1.AuthorizationPolicy{Context: map[string]string{"testserver.portcullis.dev/deny": "403"}}, Services: echo},
				{Services: echo},
			},
		}})
	if err := harness.Dir(dir).Apply(context.Background(), objs...); err != nil {
		t.Fatal(err)
	}
	httpc := harness.HTTPClient(httpAddr)
	authMetrics := "http://" + c.AuthMetrics + "/metrics"
	harness.EventuallyStatus(t, httpc, "http://app.example.com/deny", http.StatusForbidden)
	checked := func(t *testing.T) {
		t.Helper()
		if code, err := harness.StatusCode(httpc, "http://app.example.com/deny"); err != nil || code != http.StatusForbidden {
			t.Errorf("/deny: %d %v, want 403: global authorization is off", code, err)
		}
		before := harness.AuthChecks(t, authMetrics)
		if code, err := harness.StatusCode(httpc, "http://app.example.com/"); err != nil || code != http.StatusOK {
			t.Errorf("/: %d %v, want 200", code, err)
		}
		if after := harness.AuthChecks(t, authMetrics); after == before {
			t.Error("/ was not checked by the auth server")
		}
	}
	notApplied := func() float64 {
		return harness.MetricValue(t, "http://"+admin+"/metrics", "portcullis_config_file_not_applied")
	}

	for _, tc := range []struct{ name, content string }{
		{"empty file", ""},
		{"section left null", "globalExtAuth:\n"},
		{"section cut off", "# global authorization\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			harness.WriteConfigFile(t, cfg, tc.content)
			harness.Eventually(t, 10*time.Second, func() error {
				if e := configFileError(admin); !strings.Contains(e, "globalExtAuth in force but missing") {
					return fmt.Errorf("/status configFile.error = %q", e)
				}
				return nil
			})
			time.Sleep(2 * time.Second) // ten poll intervals: nothing may change
			checked(t)
			if v := notApplied(); v != 1 {
				t.Errorf("portcullis_config_file_not_applied = %v, want 1", v)
			}
		})
	}
	t.Run("explicit disable", func(t *testing.T) {
		harness.WriteConfigFile(t, cfg, "globalExtAuth: {disabled: true}\n")
		harness.EventuallyStatus(t, httpc, "http://app.example.com/deny", http.StatusOK)
		before := harness.AuthChecks(t, authMetrics)
		harness.EventuallyEcho(t, httpc, harness.MustRequest(t, "http://app.example.com/"), http.StatusOK)
		if after := harness.AuthChecks(t, authMetrics); after != before {
			t.Errorf("%d checks after global authorization was disabled", after-before)
		}
		if e := configFileError(admin); e != "" {
			t.Errorf("/status configFile.error = %q after an applied version", e)
		}
		if v := notApplied(); v != 0 {
			t.Errorf("portcullis_config_file_not_applied = %v, want 0", v)
		}
	})
}

// configFileError is the control plane's /status configFile.error (the
// error itself when /status cannot be read).
func configFileError(admin string) string {
	resp, err := http.Get("http://" + admin + "/status")
	if err != nil {
		return err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var st struct {
		ConfigFile struct {
			Error string `json:"error"`
		} `json:"configFile"`
	}
	if err := json.Unmarshal(body, &st); err != nil {
		return err.Error()
	}
	return st.ConfigFile.Error
}

// globalAuthFileStack is a control plane on the file provider whose
// configuration file (cfg) puts every host behind the test auth server
// (auth-h2c), with a real Envoy; objs are the ExtensionService and the
// endpoints of the auth server and echo, for the test to add its
// HTTPProxies to and write to dir.
type globalAuthFileStack struct {
	c                         *harness.Components
	cfg, dir, httpAddr, admin string
	objs                      []client.Object
}

func startGlobalAuthFileStack(t *testing.T) globalAuthFileStack {
	t.Helper()
	s := globalAuthFileStack{c: harness.StartComponents(t), cfg: filepath.Join(t.TempDir(), "portcullis.yaml"), dir: t.TempDir()}
	harness.WriteConfigFile(t, s.cfg, fmt.Sprintf("globalExtAuth:\n  extensionService: %s/auth-h2c\n", harness.AuthNamespace))
	s.httpAddr, _, s.admin = harness.StartEnvoyAndControlPlane(t, "--provider", "file", "-f", s.dir, "--config", s.cfg)
	h2c := "h2c"
	s.objs = []client.Object{&v1alpha1.ExtensionService{ObjectMeta: metav1.ObjectMeta{Namespace: harness.AuthNamespace, Name: "auth-h2c"},
		Spec: v1alpha1.ExtensionServiceSpec{Protocol: &h2c, Services: []v1alpha1.ExtensionServiceTarget{{Name: "auth-h2c", Port: 9000}}}}}
	s.objs = append(s.objs, harness.LoopbackEndpointSlice(harness.AuthNamespace, "auth-h2c", 9000, harness.Port(t, s.c.AuthH2C))...)
	s.objs = append(s.objs, harness.LoopbackEndpointSlice("default", "echo", 80, s.c.Echo.Port)...)
	return s
}
