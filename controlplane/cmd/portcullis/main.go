// Command portcullis is the Portcullis control plane.
package main

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"os/signal"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/portcullis/portcullis/controlplane/internal/bootstrap"
	"github.com/portcullis/portcullis/controlplane/internal/builder"
	"github.com/portcullis/portcullis/controlplane/internal/config"
	"github.com/portcullis/portcullis/controlplane/internal/extdiff"
	"github.com/portcullis/portcullis/controlplane/internal/extension"
	"github.com/portcullis/portcullis/controlplane/internal/extstage"
	"github.com/portcullis/portcullis/controlplane/internal/leader"
	"github.com/portcullis/portcullis/controlplane/internal/objects"
	"github.com/portcullis/portcullis/controlplane/internal/pipeline"
	"github.com/portcullis/portcullis/controlplane/internal/provider/file"
	"github.com/portcullis/portcullis/controlplane/internal/provider/kubernetes"
	"github.com/portcullis/portcullis/controlplane/internal/serve"
	"github.com/portcullis/portcullis/controlplane/internal/statuswriter"
	"github.com/portcullis/portcullis/controlplane/internal/xdsserver"
	"github.com/portcullis/portcullis/controlplane/internal/xdstls"
	"github.com/portcullis/portcullis/serverkit/version"
)

func main() {
	if err := newRootCommand().Execute(); err != nil {
		os.Exit(1)
	}
}

func newRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "portcullis",
		Short: "The Portcullis control plane: HTTPProxy and Gateway API resources in, Envoy configuration with external authorization out",
		Long: `portcullis reads HTTPProxy, ExtensionService and TLSCertificateDelegation
resources (the projectcontour.io API) and the Gateway API (GatewayClass,
Gateway, HTTPRoute, GRPCRoute, ReferenceGrant, with ExtAuthPolicy and
ExtProcPolicy) from Kubernetes or from YAML files,
validates them, and serves the resulting Envoy configuration over xDS: HTTP and
HTTPS listeners, routes, clusters, and Envoy's ext_authz and ext_proc filters
wherever a virtual host (or the --config file, globally) asks for external
authorization or processing. Every resource gets a status that says whether
it is valid and, if not, what is wrong and where.

Typical use:
  portcullis translate -f examples/quickstart/        # lint: status + Envoy config, no servers
  portcullis serve -f examples/quickstart/            # serve xDS from YAML files
  portcullis translate -f examples/gateway-api/basic/ # the same for Gateway API resources
  portcullis serve --provider kubernetes              # serve xDS from a cluster
  portcullis bootstrap --xds-address 127.0.0.1:8001   # the Envoy bootstrap to start Envoy with`,
		SilenceUsage: true,
		Version:      version.String(),
	}
	root.SetVersionTemplate("{{.Name}} {{.Version}}\n")
	root.AddCommand(newTranslateCommand(), newServeCommand(), newBootstrapCommand(), newEnvoyDrainCommand())
	return root
}

// buildFlags are the settings shared by translate and serve, so that
// translate shows exactly what serve would do.
type buildFlags struct {
	rootNamespaces []string
	ingressClass   string
	fallbackCert   string
	httpAddress    string
	httpsAddress   string
	redirectPort   uint32
	externalName   bool
	loopbackNames  bool
	configFile     string
	systemCAFile   string
}

func (f *buildFlags) add(fs *pflag.FlagSet) {
	fs.StringSliceVar(&f.rootNamespaces, "root-namespaces", nil, "namespaces where root HTTPProxies (with a virtualhost) may live; empty for all")
	fs.StringVar(&f.ingressClass, "ingress-class-name", "", "serve HTTPProxies with this spec.ingressClassName (and those with none)")
	fs.StringVar(&f.fallbackCert, "fallback-certificate", "", "Secret (namespace/name) served to TLS clients without SNI by virtual hosts that enable it")
	fs.BoolVar(&f.externalName, "enable-external-name-services", false, "let routes and ExtensionServices use ExternalName Services (traffic goes to their DNS name)")
	fs.BoolVar(&f.loopbackNames, "allow-loopback-external-names", false, "also allow ExternalNames that name this host (localhost, 127.0.0.0/8): they can reach Envoy's admin interface; tests and local development only")
	fs.StringVar(&f.configFile, "config", "", "configuration file: global external authorization (globalExtAuth) and processing (globalExtProc), tracing, the access log (accessLog), include limits, the Gateway API controller name (gateway), the extension servers (extensions: serve calls their hooks; translate only checks them, unless --show-extension-diff); see docs/configuration.md. serve reloads it when it changes (the extension section takes a restart)")
	fs.StringVar(&f.systemCAFile, "system-ca-file", "", "PEM bundle of the system's trust roots, sent to Envoy as the SDS secret "+builder.SystemCASecretName+": the servers of https URIs without a CA of their own (remoteJWKS without validation) are verified against it, with the URI's host name; empty for the first that exists of "+strings.Join(defaultSystemCAFiles, ", ")+"; "+noSystemCA+" for no roots (such URIs are refused). Read at startup")
	fs.StringVar(&f.httpAddress, "envoy-http-address", "0.0.0.0:8080", "address of Envoy's HTTP listener")
	fs.StringVar(&f.httpsAddress, "envoy-https-address", "0.0.0.0:8443", "address of Envoy's HTTPS listener")
	fs.Uint32Var(&f.redirectPort, "https-redirect-port", 443, "the port clients reach the HTTPS listener on (through a Service or load balancer, or Envoy's own port when they reach Envoy directly): HTTP to HTTPS redirects send them there")
}

// options are the pipeline's options, and the configuration file's
// extensions (none when it has none), checked as the hook runners will use
// them.
func (f *buildFlags) options() (pipeline.Options, *config.Config, []extension.Registration, error) {
	o, cfg, err := f.pipelineOptions()
	if err != nil || len(cfg.Extensions) == 0 {
		return o, cfg, nil, err
	}
	regs, err := extension.FromConfig(cfg)
	if err != nil {
		return o, cfg, nil, fmt.Errorf("--config: %s: %w", f.configFile, err)
	}
	return o, cfg, regs, nil
}

func (f *buildFlags) pipelineOptions() (pipeline.Options, *config.Config, error) {
	o := pipeline.Options{}
	o.Builder.RootNamespaces = f.rootNamespaces
	o.Builder.IngressClassName = f.ingressClass
	if f.fallbackCert != "" && !strings.Contains(f.fallbackCert, "/") {
		return o, nil, fmt.Errorf("--fallback-certificate must be namespace/name, got %q", f.fallbackCert)
	}
	o.Builder.FallbackCertificate = f.fallbackCert
	o.Builder.ExternalNameServices = f.externalName
	o.Builder.LoopbackExternalNames = f.loopbackNames
	var err error
	if o.Builder.HTTP.Address, o.Builder.HTTP.Port, err = bootstrap.SplitHostPort(f.httpAddress); err != nil {
		return o, nil, fmt.Errorf("--envoy-http-address: %w", err)
	}
	if o.Builder.HTTPS.Address, o.Builder.HTTPS.Port, err = bootstrap.SplitHostPort(f.httpsAddress); err != nil {
		return o, nil, fmt.Errorf("--envoy-https-address: %w", err)
	}
	if f.redirectPort == 0 || f.redirectPort > 65535 {
		return o, nil, fmt.Errorf("--https-redirect-port: %d is not a port", f.redirectPort)
	}
	o.Translator.HTTPSRedirectPort = f.redirectPort
	if o.Builder.SystemCA, err = loadSystemCA(f.systemCAFile); err != nil {
		return o, nil, fmt.Errorf("--system-ca-file: %w", err)
	}
	cfg, err := config.Load(f.configFile)
	if err != nil {
		return o, nil, fmt.Errorf("--config: %w", err)
	}
	return withConfig(o, cfg), cfg, nil
}

// withConfig applies a configuration file to the options.
func withConfig(o pipeline.Options, c *config.Config) pipeline.Options {
	o.Builder = o.Builder.WithConfig(c)
	return o
}

// configWatcher reloads the configuration file into the serve loop.
type configWatcher struct {
	path     string
	base     pipeline.Options
	interval time.Duration
	log      *slog.Logger
	// extensions is the file's extensions section at startup: a change
	// takes a restart.
	extensions []config.Extension
	// controller is the Gateway API controller name at startup: the
	// status writer keeps it (our route parents and policy ancestors are
	// those naming it), so a change takes a restart too.
	controller string
}

func (w configWatcher) Run(ctx context.Context, update func(pipeline.Options), problem func(error)) {
	// Start from the file as it was read at startup.
	first, _ := os.ReadFile(w.path)
	config.Watch(ctx, w.path, w.interval, w.log, first, func(c *config.Config) {
		if !reflect.DeepEqual(c.Extensions, w.extensions) {
			w.log.Warn("the extensions section of the configuration file changed: it takes a restart, the extensions registered at startup stay in use", "file", w.path)
		}
		o := withConfig(w.base, c)
		if n := c.Gateway.Controller(); n != w.controller {
			w.log.Warn("gateway.controllerName changed in the configuration file: it takes a restart, the name in use at startup stays", "file", w.path, "inUse", w.controller, "new", n)
			o.Builder.GatewayControllerName = w.controller
		}
		update(o)
	}, problem)
}

// translateFlags are translate's settings.
type translateFlags struct {
	paths   []string
	output  string
	strict  bool
	stats   bool
	extDiff bool
	bf      buildFlags
}

func newTranslateCommand() *cobra.Command {
	var tf translateFlags
	cmd := &cobra.Command{
		Use:   "translate -f FILE_OR_DIR ...",
		Short: "Print the status of every resource and the Envoy configuration they produce, without any server",
		Long: `translate runs the same pipeline as serve on YAML files (directories are read
recursively) and prints one document:

  status: the status portcullis would write on each object it reads: the
          Valid condition of HTTPProxies, ExtensionServices and
          TLSCertificateDelegations (errors, warnings); the Gateway API's
          conditions, listeners, route parents and policy ancestors
  xds:    listeners, routes, clusters, endpoints and secrets as Envoy receives
          them (protojson with @type; private keys redacted)

Documents of other kinds (Deployments, Pods...) are ignored. Use it to
check resources before applying them, or to see why a route does what it does.
With --config, the configuration file (global authorization and processing,
docs/configuration.md) is read and checked as serve would; its extension
servers (extensions:) are checked but not called.

--show-extension-diff (with --config registering extensions) calls them:
translate connects to each registered extension server, runs its hooks once
on the translation as serve would on a rebuild (in registration order, each
on the previous one's output), and prints, instead of the document, what each
extension changed: for every listener, route configuration (virtual host by
virtual host), cluster, endpoint assignment and secret, a unified diff of its
YAML before and after, the resources added (in full) and removed, and every
failed hook call (hook, resource, outcome, gRPC code, message). It exits
non-zero when a hook call failed, after printing the report.`,
		Example: `  portcullis translate -f examples/quickstart/
  portcullis translate -f proxy.yaml -f extension.yaml -o json --strict
  portcullis translate --config examples/global-external-authorization/portcullis.yaml -f examples/global-external-authorization/resources/
  portcullis translate --config portcullis.yaml --show-extension-diff -f resources/`,
		RunE: func(cmd *cobra.Command, _ []string) error { return tf.run(cmd) },
	}
	cmd.Flags().StringArrayVarP(&tf.paths, "filename", "f", nil, "YAML or JSON file, or directory of them (repeatable)")
	cmd.Flags().StringVarP(&tf.output, "output", "o", "yaml", "output format: yaml or json")
	cmd.Flags().BoolVar(&tf.strict, "strict", false, "exit with an error (status 1) when any resource is not valid or not served (a kind, version or class this control plane does not read): use it to lint; without it translate exits 0 and the status says what is wrong")
	cmd.Flags().BoolVar(&tf.extDiff, "show-extension-diff", false, "call the extension servers the --config file registers, once, and print what each changed (unified diffs of the resources' YAML, resources added and removed, failed hook calls) instead of the document; exits non-zero when a hook call failed. Without it translate never calls extensions")
	cmd.Flags().BoolVar(&tf.stats, "stats", false, "print to standard error how long reading, the pipeline (build + translate) and rendering took")
	tf.bf.add(cmd.Flags())
	return cmd
}

// run reads the files, runs the pipeline and prints the document (or,
// with --show-extension-diff, what the extensions changed).
func (tf *translateFlags) run(cmd *cobra.Command) error {
	if len(tf.paths) == 0 {
		return fmt.Errorf("no input: give files or directories with -f")
	}
	opts, fileCfg, regs, err := tf.bf.options()
	if err != nil {
		return err
	}
	if err := tf.checkExtensionDiff(regs); err != nil {
		return err
	}
	start := time.Now()
	set, skipped, err := file.Load(tf.paths, extensionKinds(fileCfg)...)
	if err != nil {
		return err
	}
	skipped = append(skipped, set.GatewayNotes(cmp.Or(opts.Builder.GatewayControllerName, config.DefaultGatewayControllerName))...)
	notServed := printSkipped(cmd, skipped)
	loaded := time.Now()
	res := pipeline.Run(set, opts)
	built := time.Now()
	if tf.extDiff {
		err := showExtensionDiff(cmd, regs, set, res, tf.strict)
		if tf.strict {
			err = cmp.Or(err, notServed)
		}
		return err
	}
	if err := tf.print(cmd, set, res); err != nil {
		return err
	}
	if tf.stats {
		fmt.Fprintf(cmd.ErrOrStderr(), "stats: objects=%d load=%s pipeline=%s render=%s\n", len(res.Build.Status),
			loaded.Sub(start).Round(time.Millisecond), built.Sub(loaded).Round(time.Millisecond), time.Since(built).Round(time.Millisecond))
	}
	if tf.strict {
		return cmp.Or(notServed, allValid(set, res))
	}
	return nil
}

// printSkipped says what translate did not use, and why; the error (for
// --strict) counts what was meant for portcullis but is not served: a
// document of its groups it cannot read, a Gateway without its class.
func printSkipped(cmd *cobra.Command, skipped []objects.Skipped) error {
	n := 0
	for _, s := range skipped {
		verb := "skipped"
		if s.Refused {
			verb, n = "not served:", n+1
		}
		fmt.Fprintf(cmd.ErrOrStderr(), "%s %s (%s): %s\n", verb, s.Source, s.Kind, s.Reason)
	}
	if n > 0 {
		return fmt.Errorf("%d input(s) meant for portcullis are not served (listed above)", n)
	}
	return nil
}

// checkExtensionDiff refuses --show-extension-diff without extensions to
// call, saying where they are missing.
func (tf *translateFlags) checkExtensionDiff(regs []extension.Registration) error {
	if !tf.extDiff || len(regs) > 0 {
		return nil
	}
	if tf.bf.configFile == "" {
		return fmt.Errorf("--show-extension-diff: no extensions registered: give a --config file with an extensions: section")
	}
	return fmt.Errorf("--show-extension-diff: no extensions registered: --config %s has no extensions: section", tf.bf.configFile)
}

// print writes the document of the statuses and the xDS resources.
func (tf *translateFlags) print(cmd *cobra.Command, set *objects.Set, res *pipeline.Result) error {
	doc, err := pipeline.NewDocument(set, res, metav1.Now())
	if err != nil {
		return err
	}
	return doc.WriteTo(cmd.OutOrStdout(), tf.output)
}

// allValid fails on the first object that is not valid (--strict): its
// status has errors, or a Gateway API object's conditions say it (or a
// listener, parent or ancestor of it) is not served as written, or reading
// it found what the API would refuse (an unknown or repeated field, what
// its CRD's validation refuses).
func allValid(set *objects.Set, res *pipeline.Result) error {
	for _, o := range res.Build.Status {
		if !o.Valid() {
			return fmt.Errorf("%s is not valid", o.Ref)
		}
		if p := o.GatewayAPI.Problem(); p != "" {
			return fmt.Errorf("%s is not valid: %s", o.Ref, p)
		}
	}
	refs := slices.SortedFunc(maps.Keys(set.Warnings), func(a, b objects.Ref) int { return cmp.Compare(a.String(), b.String()) })
	for _, ref := range refs {
		if ws := set.Warnings[ref]; len(ws) > 0 {
			return fmt.Errorf("%s is not valid: %s", ref, ws[0])
		}
	}
	return nil
}

// showExtensionDiff runs the extension hook stage serve runs
// (extstage.Run) once on res and prints what each extension
// changed. It fails when a hook call failed (after
// printing them all), or with strict when an object is not valid.
func showExtensionDiff(cmd *cobra.Command, regs []extension.Registration, set *objects.Set, res *pipeline.Result, strict bool) error {
	chain, closeConns, err := extension.Connect(regs)
	if err != nil {
		return err
	}
	defer closeConns()
	run := extstage.Run(cmd.Context(), chain, res, extstage.SecretsOf(set))
	for _, reg := range run.Unreachable {
		fmt.Fprintf(cmd.ErrOrStderr(), "extension %q unreachable: its ExtensionService %s is missing, invalid or has no ready endpoints in the files\n", reg.Name, reg.Service)
	}
	rep, err := extdiff.NewReport(chain, run)
	if err != nil {
		return err
	}
	if err := rep.Write(cmd.OutOrStdout()); err != nil {
		return err
	}
	if n := len(rep.Failures()); n > 0 {
		return fmt.Errorf("--show-extension-diff: %d extension hook call(s) failed (listed above)", n)
	}
	if strict {
		return allValid(set, res)
	}
	return nil
}

// serveFlags are serve's settings.
type serveFlags struct {
	provider     string
	paths        []string
	kubeconfig   string
	xdsAddress   string
	adminAddress string
	// metricsAddress serves /metrics alone (serve.Config.MetricsAddress).
	metricsAddress string
	debounce       time.Duration
	xdsTimeout     time.Duration
	interval       time.Duration
	logLevel       string
	bf             buildFlags
	election       electionFlags
	xdsTLS         xdstls.Files
}

func newServeCommand() *cobra.Command {
	var sf serveFlags
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve Envoy configuration over xDS (ADS) from Kubernetes or YAML files",
		Long: `serve watches the resources, rebuilds the configuration on every change and
serves it to Envoy over xDS (ADS, gRPC). Start Envoy with the bootstrap from
'portcullis bootstrap'.

Providers:
  file        YAML files or directories given with -f, checked for changes every
              --poll-interval (no cluster needed). Status is logged and served
              on the admin endpoint.
  kubernetes  the cluster of --kubeconfig (or in-cluster config). Status is
              written to each resource's status subresource.

Replicas (kubernetes provider, --leader-elect): every replica watches the
cluster and serves xDS from its own watches; only the holder of a Lease
(--leader-elect-namespace/--leader-elect-lease-name) writes status. When the
leader dies another replica takes the Lease within --leader-elect-lease-duration
and writes the statuses that differ from the API server's.

Configuration file (--config, docs/configuration.md): global external
authorization (globalExtAuth) and processing (globalExtProc). It is checked
every --poll-interval and applied when it changes; an invalid version is
logged and the last good one stays in force. Its extension section (an
extension server whose hooks every rebuild calls before publishing) is
read at startup only: changing it takes a restart.

xDS over mTLS (--xds-tls-cert, --xds-tls-key, --xds-tls-client-ca; all or
none): the xDS server presents the certificate and accepts only clients whose
certificate chains to the client CA bundle ('portcullis bootstrap' with its
--xds-tls-* flags gives Envoy one). The files are read again when they change
(a rotation needs no restart): new connections use the new certificates.
Without them xDS is plaintext: keep it on loopback.

Admin endpoint (--admin-address; no authentication, keep it on loopback):
  /healthz /readyz   liveness, and readiness once a configuration is built
  /status            each resource's status, and what Envoy acknowledged or rejected
  /config            the current Envoy configuration (private keys redacted)
  /extensions        what the extensions changed in the last build (unified
                     diffs per listener, virtual host, cluster and secret;
                     resources added and removed) and their failed hook calls
  /metrics           Prometheus metrics (docs/monitoring.md)

Metrics endpoint (--metrics-address): GET /metrics alone, safe to expose to
Prometheus beyond loopback.`,
		Example: `  portcullis serve -f examples/quickstart/ --envoy-http-address 127.0.0.1:8080 --envoy-https-address 127.0.0.1:8443
  portcullis serve --provider kubernetes --kubeconfig ~/.kube/config`,
		RunE: func(*cobra.Command, []string) error { return sf.run() },
	}
	sf.add(cmd.Flags())
	return cmd
}

func (sf *serveFlags) add(f *pflag.FlagSet) {
	f.StringVar(&sf.provider, "provider", "file", "where resources come from: file or kubernetes")
	f.StringArrayVarP(&sf.paths, "filename", "f", nil, "file provider: YAML file or directory (repeatable)")
	f.DurationVar(&sf.interval, "poll-interval", time.Second, "how often to check the files (file provider) and the --config file for changes")
	f.StringVar(&sf.kubeconfig, "kubeconfig", "", "kubernetes provider: kubeconfig file (default: $KUBECONFIG, then in-cluster)")
	f.StringVar(&sf.xdsAddress, "xds-address", "127.0.0.1:8001", "address of the xDS (ADS) gRPC server")
	f.StringVar(&sf.xdsTLS.Cert, "xds-tls-cert", "", "xDS over mTLS: the server's certificate (PEM chain); read again when it changes")
	f.StringVar(&sf.xdsTLS.Key, "xds-tls-key", "", "xDS over mTLS: the server's private key (PEM)")
	f.StringVar(&sf.xdsTLS.ClientCA, "xds-tls-client-ca", "", "xDS over mTLS: the CA bundle (PEM) Envoy's client certificates must chain to; clients without one are refused")
	f.DurationVar(&sf.xdsTimeout, "xds-client-timeout", xdsserver.DefaultClientTimeout, "how long an xDS client may take to read a response and to answer it (ACK or NACK): a stream that takes longer is dropped, its connection closed, and counted in portcullis_xds_streams_dropped_total")
	f.StringVar(&sf.adminAddress, "admin-address", "127.0.0.1:8002", "address of the admin HTTP endpoint (empty to disable)")
	f.StringVar(&sf.metricsAddress, "metrics-address", "", "address of an HTTP endpoint serving GET /metrics alone, for Prometheus to scrape from outside the Pod (empty: none; the admin endpoint serves /metrics too)")
	f.DurationVar(&sf.debounce, "debounce", 100*time.Millisecond, "minimum time between two builds: a change within this long of the last build waits until this long has passed, taking in the changes that arrive meanwhile (a change after a quiet period is built at once)")
	f.StringVar(&sf.logLevel, "log-level", "info", "log level: debug, info, warn or error")
	sf.bf.add(f)
	sf.election.add(f)
}

// run serves until SIGTERM or SIGINT.
func (sf *serveFlags) run() error {
	log, err := newLogger(sf.logLevel)
	if err != nil {
		return err
	}
	opts, fileCfg, exts, err := sf.bf.options()
	if err != nil {
		return err
	}
	cfg := serve.Config{Pipeline: opts, XDSAddress: sf.xdsAddress, AdminAddress: sf.adminAddress, MetricsAddress: sf.metricsAddress, Debounce: sf.debounce, Log: log, Extensions: exts,
		XDSClientTimeout: sf.xdsTimeout}
	if sf.xdsTimeout <= 0 {
		return fmt.Errorf("--xds-client-timeout must be positive, not %s", sf.xdsTimeout)
	}
	if sf.xdsTLS.Set() {
		if cfg.XDSTLS, err = xdstls.New(sf.xdsTLS, log); err != nil {
			return err
		}
	}
	if sf.bf.configFile != "" {
		cfg.Options = configWatcher{path: sf.bf.configFile, base: opts, interval: sf.interval, log: log, extensions: fileCfg.Extensions,
			controller: opts.Builder.GatewayControllerName}
	}
	switch sf.provider {
	case "file":
		err = sf.fileProvider(&cfg, fileCfg)
	case "kubernetes":
		err = sf.kubernetesProvider(&cfg, fileCfg)
	default:
		err = fmt.Errorf("unknown provider %q: use file or kubernetes", sf.provider)
	}
	if err != nil {
		return err
	}
	if sf.election.enabled && sf.provider != "kubernetes" {
		return fmt.Errorf("--leader-elect needs --provider kubernetes (the file provider writes no status)")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return serve.Run(ctx, cfg)
}

// fileProvider sets up cfg to read the files of -f and log the statuses.
func (sf *serveFlags) fileProvider(cfg *serve.Config, fileCfg *config.Config) error {
	if len(sf.paths) == 0 {
		return fmt.Errorf("the file provider needs files or directories: give them with -f")
	}
	// A mistyped path would otherwise serve an empty configuration,
	// quietly.
	files, err := file.Files(sf.paths)
	if err != nil {
		return fmt.Errorf("-f: %w", err)
	}
	if len(files) == 0 {
		cfg.Log.Warn("no YAML or JSON files in the given paths: serving an empty configuration until some appear", "paths", sf.paths)
	}
	cfg.Provider = fileProvider{paths: sf.paths, interval: sf.interval, log: cfg.Log, extensionKinds: extensionKinds(fileCfg)}
	cfg.Status = &statuswriter.Log{Log: cfg.Log}
	return nil
}

// kubernetesProvider sets up cfg to watch the cluster and write the
// statuses there (the leader only, with --leader-elect).
func (sf *serveFlags) kubernetesProvider(cfg *serve.Config, fileCfg *config.Config) error {
	p, err := kubernetes.New(sf.kubeconfig, cfg.Log, extensionKinds(fileCfg)...)
	if err != nil {
		return err
	}
	cfg.Provider = p
	if sf.election.enabled {
		e, err := sf.election.elector(p, cfg.Log)
		if err != nil {
			return err
		}
		cfg.Leader = e
	}
	// The controller name of the configuration at the start: the route
	// parents and policy ancestors naming it are ours.
	b := cfg.Pipeline.Builder
	cfg.Status = &statuswriter.Kubernetes{Cache: p.Cache(), Client: p.Client(), Log: cfg.Log,
		GatewayController: gwapiv1.GatewayController(b.GatewayControllerName)}
	if b.GatewayServicePerGateway {
		ns, _, _ := strings.Cut(b.EnvoyService, "/")
		cfg.GatewayServices = &statuswriter.Services{Cache: p.Cache(), Client: p.Client(), Namespace: ns, Log: cfg.Log}
	}
	return nil
}

// electionFlags are serve's leader election settings.
type electionFlags struct {
	enabled bool
	leader.Options
}

// elector campaigns for the Lease in p's cluster, with the Pod's namespace
// and a unique identity unless the flags name them.
func (e *electionFlags) elector(p *kubernetes.Provider, log *slog.Logger) (*leader.Elector, error) {
	o := e.Options
	if o.Namespace == "" {
		o.Namespace = leader.DefaultNamespace()
	}
	if o.Identity == "" {
		o.Identity = leader.DefaultIdentity()
	}
	return leader.New(p.RestConfig(), o, log)
}

func (e *electionFlags) add(f *pflag.FlagSet) {
	f.BoolVar(&e.enabled, "leader-elect", false, "kubernetes provider: elect, with a Lease, the one replica that writes status (every replica still serves xDS); on in the Helm chart when it runs more than one control plane")
	f.StringVar(&e.Namespace, "leader-elect-namespace", "", "namespace of the Lease (default: the Pod's own; outside a cluster, \"default\")")
	f.StringVar(&e.Name, "leader-elect-lease-name", leader.DefaultName, "name of the Lease: replicas sharing it elect one leader")
	f.StringVar(&e.Identity, "leader-elect-identity", "", "this replica's name in the Lease, unique among the replicas (default: the host name, the Pod's in a cluster, and a random suffix)")
	f.DurationVar(&e.LeaseDuration, "leader-elect-lease-duration", leader.DefaultLeaseDuration, "how long after the leader's last renewal another replica takes the Lease (the longest time without a status writer when the leader dies)")
	f.DurationVar(&e.RenewDeadline, "leader-elect-renew-deadline", leader.DefaultRenewDeadline, "how long the leader keeps trying to renew the Lease before it stops writing status (less than the lease duration)")
	f.DurationVar(&e.RetryPeriod, "leader-elect-retry-period", leader.DefaultRetryPeriod, "how often replicas try to take or renew the Lease")
}

type fileProvider struct {
	paths    []string
	interval time.Duration
	log      *slog.Logger
	// extensionKinds are the kinds the extension servers registered.
	extensionKinds []schema.GroupVersionKind
}

func (p fileProvider) Run(ctx context.Context, update func(*objects.Set)) error {
	file.Watch(ctx, p.paths, p.interval, p.log, update, p.extensionKinds...)
	return nil
}

// extensionKinds are the kinds the configuration file's extensions
// registered, which the providers read into objects.Set.Extensions (none
// without a configuration file).
func extensionKinds(cfg *config.Config) []schema.GroupVersionKind {
	if cfg == nil {
		return nil
	}
	var out []schema.GroupVersionKind
	for _, k := range cfg.ExtensionKinds() {
		out = append(out, schema.GroupVersionKind{Group: k.Group, Version: k.Version, Kind: k.Kind})
	}
	return out
}

func newLogger(level string) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level: %w", err)
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: l})), nil
}

// bootstrapFlags are bootstrap's settings.
type bootstrapFlags struct {
	o   bootstrap.Options
	t   bootstrap.TLS
	out string
}

func newBootstrapCommand() *cobra.Command {
	var bf bootstrapFlags
	cmd := &cobra.Command{
		Use:   "bootstrap",
		Short: "Print the Envoy bootstrap that connects Envoy to the portcullis xDS server",
		Long: `bootstrap prints (or writes with -o) the Envoy bootstrap configuration: Envoy's
admin interface, and an ADS connection to portcullis from which Envoy gets
everything else. Start Envoy with: envoy -c bootstrap.json

With --xds-tls-cert, --xds-tls-key and --xds-tls-ca, Envoy connects over
mutual TLS (serve's --xds-tls-* flags): it presents the client certificate
and accepts only a server certificate of the CA bundle, for the name
--xds-tls-server-name. Envoy reads them through SDS from files: bootstrap
also writes two SDS files (xds-client-certificate.json, xds-trusted-ca.json)
into --sds-dir (default: the directory of -o), which name the certificate
files. Envoy watches the certificates' directories and loads rotated files
without a restart (replace them atomically, as Kubernetes does for a Secret
volume; the certificate and its key must be in one directory). Paths must
be absolute.`,
		Example: `  portcullis bootstrap --xds-address 127.0.0.1:8001 -o /tmp/envoy.json && envoy -c /tmp/envoy.json
  portcullis bootstrap --xds-address portcullis.portcullis-system.svc:8001 -o /config/envoy.json \
    --xds-tls-cert /certs/tls.crt --xds-tls-key /certs/tls.key --xds-tls-ca /certs/ca.crt`,
		RunE: func(cmd *cobra.Command, _ []string) error { return bf.run(cmd) },
	}
	bf.add(cmd.Flags())
	return cmd
}

func (bf *bootstrapFlags) add(f *pflag.FlagSet) {
	o, t := &bf.o, &bf.t
	f.StringVar(&o.XDSAddress, "xds-address", "127.0.0.1:8001", "the portcullis xDS server, host:port")
	f.StringVar(&o.StatsAddress, "stats-address", "", "a listener (host:port) that serves only GET /stats/prometheus from the admin interface, for Prometheus to scrape from outside the Pod (the admin interface stays on loopback); empty for none")
	f.StringVar(&o.AdminAddress, "envoy-admin-address", "127.0.0.1:9901", "where Envoy's admin interface listens (keep it on loopback)")
	f.StringVar(&o.ReadyAddress, "ready-address", "", "a listener (host:port) that serves only GET /ready from the admin interface, for readiness probes from outside the Pod (the admin interface stays on loopback); empty for none")
	f.StringVar(&o.NodeID, "node-id", "envoy", "this Envoy's node ID")
	f.StringVar(&o.NodeCluster, "node-cluster", "portcullis", "this Envoy's node cluster")
	f.BoolVar(&o.SotW, "sotw", false, "use state-of-the-world xDS instead of incremental (delta) xDS")
	f.StringVarP(&bf.out, "output", "o", "", "write the bootstrap to this file instead of standard output")
	f.StringVar(&t.CertFile, "xds-tls-cert", "", "xDS over mTLS: Envoy's client certificate file (PEM), as Envoy sees it; reloaded when it changes")
	f.StringVar(&t.KeyFile, "xds-tls-key", "", "xDS over mTLS: its private key file (PEM), in the certificate's directory")
	f.StringVar(&t.CAFile, "xds-tls-ca", "", "xDS over mTLS: the CA bundle file (PEM) the xDS server's certificate must chain to; reloaded when it changes")
	f.StringVar(&t.ServerName, "xds-tls-server-name", "", "xDS over mTLS: the name sent as SNI, which the server's certificate must have as a subject alternative name (default: the host of --xds-address)")
	f.StringVar(&t.SDSDir, "sds-dir", "", "xDS over mTLS: where to write the SDS files the bootstrap names (default: the directory of -o)")
}

// run writes the SDS files (with --xds-tls-*), then prints or writes the
// bootstrap.
func (bf *bootstrapFlags) run(cmd *cobra.Command) error {
	o, t, out := bf.o, bf.t, bf.out
	toStdout := out == "" || out == "-"
	if t.CertFile != "" || t.KeyFile != "" || t.CAFile != "" {
		if t.SDSDir == "" {
			if toStdout {
				return fmt.Errorf("--xds-tls-*: give --sds-dir (or -o: the SDS files go beside the bootstrap)")
			}
			abs, err := filepath.Abs(filepath.Dir(out))
			if err != nil {
				return err
			}
			t.SDSDir = abs
		}
		o.TLS = &t
	}
	b, err := bootstrap.Build(o)
	if err != nil {
		return err
	}
	sds, err := bootstrap.SDSFiles(o)
	if err != nil {
		return err
	}
	for name, content := range sds {
		if err := writeAtomic(filepath.Join(t.SDSDir, name), append(content, '\n')); err != nil {
			return err
		}
	}
	if toStdout {
		_, err = fmt.Fprintln(cmd.OutOrStdout(), string(b))
		return err
	}
	return os.WriteFile(out, append(b, '\n'), envoyReadable)
}

// envoyReadable is the mode of the files bootstrap writes for Envoy: Envoy
// may run as another user than bootstrap (an init container's), and they
// hold no secret (the SDS files name the certificate and key files, which
// keep their own modes).
const envoyReadable os.FileMode = 0o644

// writeAtomic writes a file through a rename: Envoy watches SDS files for
// moves, and never reads half of one.
func writeAtomic(path string, data []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, envoyReadable); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
