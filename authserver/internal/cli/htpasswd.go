package cli

import (
	"fmt"
	"os"
	"time"

	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/portcullis/portcullis/authserver/internal/htpasswd"
)

// basicAuthLong is the htpasswd command's long help.
const basicAuthLong = `htpasswd authenticates requests with HTTP Basic credentials checked against
htpasswd data from Kubernetes Secrets and/or files.

It is configured with the flags below, or with --config FILE holding the
same settings under the key "htpasswd", each named after its flag in --help
(docs/authserver-htpasswd.md); a flag given with --config replaces that
field of the file. For example:

  htpasswd:
    realm: staff
    watchNamespaces: [auth]
    cacheTTL: 5m

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

// htpasswdConfig is the htpasswd backend's configuration: the "htpasswd:"
// section of --config, or the flags.
type htpasswdConfig struct {
	Realm               string   `json:"realm"`
	Files               []string `json:"files"`
	FilePollInterval    duration `json:"filePollInterval"`
	Secrets             string   `json:"secrets"`
	Kubeconfig          string   `json:"kubeconfig"`
	WatchNamespaces     []string `json:"watchNamespaces"`
	Selector            string   `json:"selector"`
	SyncTimeout         duration `json:"syncTimeout"`
	AllowInsecureHashes bool     `json:"allowInsecureHashes"`
	StripAuthorization  bool     `json:"stripAuthorization"`
	CacheSize           int      `json:"cacheSize"`
	CacheTTL            duration `json:"cacheTTL"`
	MaxConcurrentHashes int      `json:"maxConcurrentHashes"`
}

var htpasswdBackend = backendSpec[htpasswdConfig]{
	name:  htpasswd.Name,
	short: "HTTP Basic authentication (bcrypt) from htpasswd Secrets and files",
	long:  basicAuthLong,
	example: `  # in a pod: every Secret annotated projectcontour.io/auth-type: basic
  authserver htpasswd --address :9443 --metrics-address :9090 \
    --tls-cert-path tls.crt --tls-key-path tls.key --tls-ca-path ca.crt

  # one namespace, labelled Secrets, realm "staff", from outside the cluster
  authserver htpasswd --kubeconfig ~/.kube/config --watch-namespaces auth \
    --selector app=portcullis --auth-realm staff

  # files only
  authserver htpasswd --secrets off --htpasswd-file /etc/portcullis/users

  # the same from a file: {htpasswd: {secrets: "off", files: [/etc/portcullis/users]}}
  authserver htpasswd --config /etc/authserver/config.yaml`,
	defaults: func() htpasswdConfig {
		return htpasswdConfig{Realm: htpasswd.DefaultRealm, FilePollInterval: duration(htpasswd.DefaultFilePollInterval),
			Secrets: "auto", SyncTimeout: duration(time.Minute), CacheSize: htpasswd.DefaultCacheSize,
			CacheTTL: duration(htpasswd.DefaultCacheTTL)}
	},
	flags: func(c *htpasswdConfig, fs *pflag.FlagSet) {
		fs.StringVar(&c.Realm, "auth-realm", c.Realm, "realm of routes that do not set htpasswd.portcullis.dev/realm (file: realm)")
		fs.StringArrayVar(&c.Files, "htpasswd-file", nil, "htpasswd file with users of every realm (repeatable; watched) (file: files)")
		fs.DurationVar(c.FilePollInterval.flag(), "file-poll-interval", time.Duration(c.FilePollInterval), "how often --htpasswd-file files are re-read (file: filePollInterval)")
		fs.StringVar(&c.Secrets, "secrets", c.Secrets, "read Secrets: auto (when --kubeconfig is set or in a pod), on, off (file: secrets)")
		fs.StringVar(&c.Kubeconfig, "kubeconfig", "", "kubeconfig file; empty uses the pod's service account (file: kubeconfig)")
		fs.StringSliceVar(&c.WatchNamespaces, "watch-namespaces", nil, "namespaces whose Secrets are read (comma-separated or repeated); empty means all (file: watchNamespaces)")
		fs.StringVar(&c.Selector, "selector", "", "label selector for Secrets, e.g. app=portcullis (file: selector)")
		fs.DurationVar(c.SyncTimeout.flag(), "sync-timeout", time.Duration(c.SyncTimeout), "how long the initial Secret list may take before start-up fails (file: syncTimeout)")
		fs.BoolVar(&c.AllowInsecureHashes, "allow-insecure-hashes", false, "also accept {SHA}, {SSHA}, MD5-crypt, SHA-crypt and plain-text passwords (a warning per user) (file: allowInsecureHashes)")
		fs.BoolVar(&c.StripAuthorization, "strip-authorization", false, "remove the Authorization header from allowed requests, so the upstream never sees the password (file: stripAuthorization)")
		fs.IntVar(&c.CacheSize, "cache-size", c.CacheSize, "successful verifications kept in the cache; 0 disables it (every check runs bcrypt) (file: cacheSize)")
		fs.DurationVar(c.CacheTTL.flag(), "cache-ttl", time.Duration(c.CacheTTL), "how long a successful verification is reused (file: cacheTTL)")
		fs.IntVar(&c.MaxConcurrentHashes, "max-concurrent-hashes", 0, "hash comparisons running at once; 0 means the number of CPUs (file: maxConcurrentHashes)")
		for flag, field := range map[string]string{"auth-realm": "realm", "htpasswd-file": "files", "file-poll-interval": "filePollInterval",
			"secrets": "secrets", "kubeconfig": "kubeconfig", "watch-namespaces": "watchNamespaces", "selector": "selector",
			"sync-timeout": "syncTimeout", "allow-insecure-hashes": "allowInsecureHashes", "strip-authorization": "stripAuthorization",
			"cache-size": "cacheSize", "cache-ttl": "cacheTTL", "max-concurrent-hashes": "maxConcurrentHashes"} {
			flagField(fs, flag, field)
		}
	},
	build: func(c htpasswdConfig, e env) (authv3.AuthorizationServer, error) {
		srv, err := c.build(e)
		if err != nil {
			return nil, err // not a typed nil in the interface
		}
		return srv, nil
	},
}

// build validates the configuration, loads every source and starts
// watching them. Errors name the flag; the file's field is named after it
// in --help.
func (f *htpasswdConfig) build(e env) (*htpasswd.Server, error) {
	useSecrets, err := f.useSecrets()
	if err != nil {
		return nil, err
	}
	if !useSecrets && len(f.Files) == 0 {
		return nil, fmt.Errorf("no users: give --htpasswd-file, or read Secrets (--kubeconfig, or run in a pod)")
	}
	if _, err := labels.Parse(f.Selector); err != nil {
		return nil, fmt.Errorf("--selector: %w", err)
	}
	if f.CacheSize < 0 || f.MaxConcurrentHashes < 0 || f.FilePollInterval <= 0 {
		return nil, fmt.Errorf("--cache-size and --max-concurrent-hashes must not be negative, --file-poll-interval must be positive")
	}
	srv, err := htpasswd.New(htpasswd.Options{
		Realm: f.Realm, AllowInsecureHashes: f.AllowInsecureHashes, StripAuthorization: f.StripAuthorization,
		CacheSize: f.CacheSize, CacheTTL: time.Duration(f.CacheTTL), MaxConcurrentHashes: f.MaxConcurrentHashes,
		Registry: e.registry, Logger: e.logger, TracerProvider: e.tracing,
	})
	if err != nil {
		return nil, err
	}
	for _, path := range f.Files {
		if err := srv.AddFile(path); err != nil {
			return nil, fmt.Errorf("--htpasswd-file: %w", err)
		}
	}
	if len(f.Files) > 0 {
		go srv.WatchFiles(e.ctx, time.Duration(f.FilePollInterval))
	}
	if useSecrets {
		client, err := f.kubeClient()
		if err != nil {
			return nil, err
		}
		if err := srv.WatchSecrets(e.ctx, htpasswd.SecretsConfig{Client: client, Namespaces: f.WatchNamespaces,
			Selector: f.Selector, SyncTimeout: time.Duration(f.SyncTimeout)}); err != nil {
			return nil, err
		}
	}
	srv.Start()
	e.logger.Info("htpasswd users loaded", "realm", f.Realm, "files", len(f.Files), "secrets", useSecrets,
		"namespaces", f.WatchNamespaces, "selector", f.Selector, "insecure_hashes", f.AllowInsecureHashes)
	return srv, nil
}

func (f *htpasswdConfig) useSecrets() (bool, error) {
	switch f.Secrets {
	case "on":
		return true, nil
	case "off":
		return false, nil
	case "auto":
		return f.Kubeconfig != "" || os.Getenv("KUBERNETES_SERVICE_HOST") != "", nil
	}
	return false, fmt.Errorf("--secrets must be auto, on or off, not %q", f.Secrets)
}

func (f *htpasswdConfig) kubeClient() (kubernetes.Interface, error) {
	var cfg *rest.Config
	var err error
	if f.Kubeconfig != "" {
		cfg, err = clientcmd.BuildConfigFromFlags("", f.Kubeconfig)
	} else {
		cfg, err = rest.InClusterConfig()
	}
	if err != nil {
		return nil, fmt.Errorf("configuring the Kubernetes client: %w", err)
	}
	cfg.UserAgent = "portcullis-authserver-htpasswd"
	return kubernetes.NewForConfig(cfg)
}
