package pipeline_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/portcullis/portcullis/controlplane/internal/pipeline"
	"github.com/portcullis/portcullis/controlplane/internal/provider/file"
	"github.com/portcullis/portcullis/controlplane/internal/translator"
)

// specExtProcRoutes are the reference routes of the external-processing
// sample (docs/design/external-processing.md, "Samples"), in the snake_case
// form they were first written in.
const specExtProcRoutes = `[
  {
    "match": {"prefix": "/disabled"},
    "route": {"cluster": "extproc-test/http-echo-service/5678/da39a3ee5e"},
    "typed_per_filter_config": {
      "envoy.filters.http.ext_proc": {
        "@type": "type.googleapis.com/envoy.extensions.filters.http.ext_proc.v3.ExtProcPerRoute",
        "disabled": true
      }
    }
  },
  {
    "match": {"prefix": "/override"},
    "route": {"cluster": "extproc-test/http-echo-service3/5678/da39a3ee5e"},
    "typed_per_filter_config": {
      "envoy.filters.http.ext_proc": {
        "@type": "type.googleapis.com/envoy.extensions.filters.http.ext_proc.v3.ExtProcPerRoute",
        "overrides": {
          "grpc_service": {
            "envoy_grpc": {
              "authority": "extension.extproc-test.extproc-extsvc3",
              "cluster_name": "extension/extproc-test/extproc-extsvc3"
            },
            "timeout": "30s"
          },
          "processing_mode": {
            "request_header_mode": "SEND",
            "request_trailer_mode": "SKIP",
            "response_header_mode": "SEND",
            "response_trailer_mode": "SKIP"
          }
        }
      }
    }
  },
  {
    "match": {"prefix": "/inherit"},
    "route": {"cluster": "extproc-test/http-echo-service2/5678/da39a3ee5e"}
  }
]`

// TestExternalProcessingExampleMatchesSpec runs examples/external-processing
// and compares its routes with the reference routes of
// docs/design/external-processing.md. Five differences are by design
// and normalised away: our cluster names ("service/<ns>/<name>/<port>"),
// our ExtensionService authority ("<name>.<ns>"), our prefix matches,
// which stop at segment boundaries (path_separated_prefix: "/override" does
// not match "/overrides"), our route actions' 500 for a cluster that
// does not exist (cluster_not_found_response_code), and our gRPC
// services' retry_policy (a call that never reached a server goes to
// another endpoint).
func TestExternalProcessingExampleMatchesSpec(t *testing.T) {
	set, _, err := file.Load([]string{"../../../examples/external-processing/resources"})
	if err != nil {
		t.Fatal(err)
	}
	res := pipeline.Run(set, pipeline.DefaultOptions())
	for _, o := range res.Build.Status {
		if !o.Valid() {
			t.Errorf("%s is not valid: %+v", o.Ref, o.Errors)
		}
	}
	var got any
	for _, m := range res.Resources.Routes {
		if translator.ResourceName(m) != translator.SecureRouteConfigName("https.projectcontour.io") {
			continue
		}
		b, err := pipeline.MarshalResource(m)
		if err != nil {
			t.Fatal(err)
		}
		var rc struct {
			VirtualHosts []struct {
				Routes json.RawMessage `json:"routes"`
			} `json:"virtualHosts"`
		}
		if err := json.Unmarshal(b, &rc); err != nil || len(rc.VirtualHosts) != 1 {
			t.Fatalf("route configuration %s: %v", b, err)
		}
		got = normalise(t, rc.VirtualHosts[0].Routes, false)
	}
	if got == nil {
		t.Fatal("no route configuration for https.projectcontour.io")
	}
	want := normalise(t, []byte(specExtProcRoutes), true)
	if !reflect.DeepEqual(got, want) {
		g, _ := json.MarshalIndent(got, "", "  ")
		w, _ := json.MarshalIndent(want, "", "  ")
		t.Errorf("routes differ from the reference routes\ngot:  %s\nwant: %s", g, w)
	}
}

// normalise decodes JSON with snake_case keys (the reference's form) or
// lowerCamelCase keys (protojson's) into one form, with the by-design
// differences mapped.
func normalise(t *testing.T, b []byte, spec bool) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	var walk func(v any, key string) any
	walk = func(v any, key string) any {
		switch x := v.(type) {
		case map[string]any:
			out := map[string]any{}
			for k, e := range x {
				if (k == "clusterNotFoundResponseCode" || k == "retryPolicy") && !spec {
					continue
				}
				nk := k
				if !strings.HasPrefix(k, "@") && !strings.Contains(k, ".") {
					nk = strings.ReplaceAll(camelToSnake(k), "path_separated_prefix", "prefix")
				}
				out[nk] = walk(e, nk)
			}
			return out
		case []any:
			for i := range x {
				x[i] = walk(x[i], key)
			}
			return x
		case string:
			switch {
			case key == "cluster" && spec:
				// "<ns>/<name>/<port>/<hash>" -> ours.
				parts := strings.Split(x, "/")
				return "service/" + strings.Join(parts[:3], "/")
			case key == "authority" && spec:
				// "extension.<ns>.<name>" -> ours, "<name>.<ns>".
				parts := strings.Split(x, ".")
				return parts[2] + "." + parts[1]
			}
		}
		return v
	}
	return walk(v, "")
}

func camelToSnake(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r >= 'A' && r <= 'Z' {
			b.WriteByte('_')
			r += 'a' - 'A'
		}
		b.WriteRune(r)
	}
	return b.String()
}
