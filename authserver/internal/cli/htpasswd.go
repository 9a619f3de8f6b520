package cli

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/portcullis/portcullis/authserver/internal/htpasswd"
	"github.com/portcullis/portcullis/serverkit/command"
)

const htpasswdLong = `htpasswd authenticates requests with HTTP Basic credentials checked against
htpasswd data from Kubernetes Secrets and/or files.

Secrets (compatible with Contour's authserver) are used when they are
annotated projectcontour.io/auth-type: basic, have an "auth" key with
htpasswd lines, and their projectcontour.io/auth-realm annotation is absent
or "*" (users of every realm) or names a realm. Secrets are read with a
client-go informer when --kubeconfig is given or the server runs in a pod
(--secrets=auto); RBAC must allow get, list and watch on secrets in the
watched namespaces. Files given with --htpasswd-file hold users of every
realm and are re-read every --file-poll-interval. Every change applies
within seconds, without a restart, by swapping the whole user table at once.
A bad line is skipped and reported (log and metric); the rest is used.

Hashes: bcrypt only (htpasswd -B). {SHA}, {SSHA}, $apr1$/$1$ (MD5-crypt),
$5$/$6$ (SHA-crypt) and plain text are rejected unless
--allow-insecure-hashes is given (then each such user is logged as a
warning at load). DES crypt, other formats and bcrypt costs above 16 are
never accepted. bcrypt reads only the first 72 bytes of a password, so a
longer password is refused (401) for bcrypt users instead of being matched
on its first 72 bytes.

Realm: --auth-realm, or per route with the context key (HTTPProxy
authPolicy.context)
  htpasswd.portcullis.dev/realm: "<realm>"
Only users of that realm (and of every realm) are accepted there.

Allowed requests reach the upstream with these headers, client-supplied
copies removed (ignoring case and '-' versus '_'):
  Auth-Username: <user>
  Auth-Realm: <realm>
  Auth-Handler: htpasswd
  Auth-Context-<Key>: <value>   one per authPolicy context entry
The Authorization header is forwarded too, as with Contour, unless
--strip-authorization is given. Other requests get 401 with
WWW-Authenticate: Basic realm="<realm>".

Cost: successful verifications are cached (--cache-size, --cache-ttl) under
an HMAC of realm, user, password and stored hash with a random per-process
key, so a password change or removal applies at once; failures are not
cached. Concurrent identical verifications share one bcrypt; unknown users
cost a bcrypt of the most common cost, like a wrong password.

Metrics, besides the shared ones:
  portcullis_authserver_htpasswd_users, _sources, _skipped_lines
  portcullis_authserver_htpasswd_reloads_total
  portcullis_authserver_htpasswd_load_errors_total{reason}
  portcullis_authserver_htpasswd_cache_lookups_total{result}, _cache_entries
  portcullis_authserver_htpasswd_hash_comparisons_total`

type htpasswdFlags struct {
	realm          string
	files          []string
	pollInterval   time.Duration
	secrets        string
	kubeconfig     string
	namespaces     []string
	selector       string
	syncTimeout    time.Duration
	allowInsecure  bool
	stripAuthz     bool
	cacheSize      int
	cacheTTL       time.Duration
	maxConcurrency int
}

func newHtpasswdCommand(serving *command.Serving) *cobra.Command {
	f := htpasswdFlags{realm: htpasswd.DefaultRealm, pollInterval: htpasswd.DefaultFilePollInterval, secrets: "auto",
		syncTimeout: time.Minute, cacheSize: htpasswd.DefaultCacheSize, cacheTTL: htpasswd.DefaultCacheTTL}
	cmd := &cobra.Command{
		Use:   "htpasswd",
		Short: "HTTP Basic authentication (bcrypt) from htpasswd Secrets and files",
		Long:  htpasswdLong,
		Example: `  # in a pod: every Secret annotated projectcontour.io/auth-type: basic
  authserver htpasswd --address :9443 --metrics-address :9090 \
    --tls-cert-path tls.crt --tls-key-path tls.key --tls-ca-path ca.crt

  # one namespace, labelled Secrets, realm "staff", from outside the cluster
  authserver htpasswd --kubeconfig ~/.kube/config --watch-namespaces auth \
    --selector app=portcullis --auth-realm staff

  # files only
  authserver htpasswd --secrets off --htpasswd-file /etc/portcullis/users`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runBackend(cmd, serving, func(ctx context.Context, reg *prometheus.Registry, logger *slog.Logger) (backend, error) {
				srv, err := f.build(ctx, reg, logger)
				if err != nil {
					return backend{}, err
				}
				return backend{name: htpasswd.Name, impl: srv}, nil
			})
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&f.realm, "auth-realm", f.realm, "realm of routes that do not set htpasswd.portcullis.dev/realm")
	fs.StringArrayVar(&f.files, "htpasswd-file", nil, "htpasswd file with users of every realm (repeatable; watched)")
	fs.DurationVar(&f.pollInterval, "file-poll-interval", f.pollInterval, "how often --htpasswd-file files are re-read")
	fs.StringVar(&f.secrets, "secrets", f.secrets, "read Secrets: auto (when --kubeconfig is set or in a pod), on, off")
	fs.StringVar(&f.kubeconfig, "kubeconfig", "", "kubeconfig file; empty uses the pod's service account")
	fs.StringSliceVar(&f.namespaces, "watch-namespaces", nil, "namespaces whose Secrets are read (comma-separated or repeated); empty means all")
	fs.StringVar(&f.selector, "selector", "", "label selector for Secrets, e.g. app=portcullis")
	fs.DurationVar(&f.syncTimeout, "sync-timeout", f.syncTimeout, "how long the initial Secret list may take before start-up fails")
	fs.BoolVar(&f.allowInsecure, "allow-insecure-hashes", false, "also accept {SHA}, {SSHA}, MD5-crypt, SHA-crypt and plain-text passwords (a warning per user)")
	fs.BoolVar(&f.stripAuthz, "strip-authorization", false, "remove the Authorization header from allowed requests, so the upstream never sees the password")
	fs.IntVar(&f.cacheSize, "cache-size", f.cacheSize, "successful verifications kept in the cache; 0 disables it (every check runs bcrypt)")
	fs.DurationVar(&f.cacheTTL, "cache-ttl", f.cacheTTL, "how long a successful verification is reused")
	fs.IntVar(&f.maxConcurrency, "max-concurrent-hashes", 0, "hash comparisons running at once; 0 means the number of CPUs")
	return cmd
}

// build validates the flags, loads every source and starts watching them.
func (f *htpasswdFlags) build(ctx context.Context, reg *prometheus.Registry, logger *slog.Logger) (*htpasswd.Server, error) {
	useSecrets, err := f.useSecrets()
	if err != nil {
		return nil, err
	}
	if !useSecrets && len(f.files) == 0 {
		return nil, fmt.Errorf("no users: give --htpasswd-file, or read Secrets (--kubeconfig, or run in a pod)")
	}
	if _, err := labels.Parse(f.selector); err != nil {
		return nil, fmt.Errorf("--selector: %w", err)
	}
	if f.cacheSize < 0 || f.maxConcurrency < 0 || f.pollInterval <= 0 {
		return nil, fmt.Errorf("--cache-size and --max-concurrent-hashes must not be negative, --file-poll-interval must be positive")
	}
	srv, err := htpasswd.New(htpasswd.Options{
		Realm: f.realm, AllowInsecureHashes: f.allowInsecure, StripAuthorization: f.stripAuthz,
		CacheSize: f.cacheSize, CacheTTL: f.cacheTTL, MaxConcurrentHashes: f.maxConcurrency,
		Registry: reg, Logger: logger,
	})
	if err != nil {
		return nil, err
	}
	for _, path := range f.files {
		if err := srv.AddFile(path); err != nil {
			return nil, fmt.Errorf("--htpasswd-file: %w", err)
		}
	}
	if len(f.files) > 0 {
		go srv.WatchFiles(ctx, f.pollInterval)
	}
	if useSecrets {
		client, err := f.kubeClient()
		if err != nil {
			return nil, err
		}
		if err := srv.WatchSecrets(ctx, htpasswd.SecretsConfig{Client: client, Namespaces: f.namespaces,
			Selector: f.selector, SyncTimeout: f.syncTimeout}); err != nil {
			return nil, err
		}
	}
	srv.Start()
	logger.Info("htpasswd users loaded", "realm", f.realm, "files", len(f.files), "secrets", useSecrets,
		"namespaces", f.namespaces, "selector", f.selector, "insecure_hashes", f.allowInsecure)
	return srv, nil
}

func (f *htpasswdFlags) useSecrets() (bool, error) {
	switch f.secrets {
	case "on":
		return true, nil
	case "off":
		return false, nil
	case "auto":
		return f.kubeconfig != "" || os.Getenv("KUBERNETES_SERVICE_HOST") != "", nil
	}
	return false, fmt.Errorf("--secrets must be auto, on or off, not %q", f.secrets)
}

func (f *htpasswdFlags) kubeClient() (kubernetes.Interface, error) {
	var cfg *rest.Config
	var err error
	if f.kubeconfig != "" {
		cfg, err = clientcmd.BuildConfigFromFlags("", f.kubeconfig)
	} else {
		cfg, err = rest.InClusterConfig()
	}
	if err != nil {
		return nil, fmt.Errorf("Kubernetes client: %w", err)
	}
	cfg.UserAgent = "portcullis-authserver-htpasswd"
	return kubernetes.NewForConfig(cfg)
}
