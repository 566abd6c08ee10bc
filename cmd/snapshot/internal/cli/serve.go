package cli

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/warmcache/warmcache/cmd/snapshot/internal/apiserver"
	"github.com/warmcache/warmcache/cmd/snapshot/internal/printers"
	"github.com/warmcache/warmcache/store/bolt/inspect"
)

// serveOptions is `snapshot serve FILE|URL`.
type serveOptions struct {
	fileCommand

	Address    string
	Kubeconfig string
	Token      string
	TokenFile  string

	// source is the backup URL served instead of a file, with the
	// --backup-* flags; Refresh is how often a new copy is fetched (0:
	// never).
	source  backupSource
	Refresh time.Duration

	token    string
	loopback bool
	// remote is set when the argument is a URL; urlFlags are the flags
	// given that only a URL uses.
	remote   bool
	urlFlags []string
	// stderr serialises the writes of the server's goroutines.
	stderr io.Writer
	// copies counts the retired copies not yet closed.
	copies sync.WaitGroup
	// lastNotes are the notes on the resources of the copy served last,
	// not repeated for each refresh.
	lastNotes string
}

// minRefresh is the shortest --refresh: each refresh copies the whole file
// out of the running process.
const minRefresh = time.Second

func newServeCommand(c command) *cobra.Command {
	o := &serveOptions{fileCommand: c.file(), source: backupSource{prefix: "backup-"}}
	cmd := &cobra.Command{
		Use:   "serve FILE|URL",
		Short: "Serve a cache file as a read-only Kubernetes API, for kubectl and client-go",
		Long: `Serve the objects of FILE as a read-only Kubernetes API server, so that kubectl,
client-go programs and other tools read the snapshot as they read a cluster, and print
a kubeconfig for it (on standard output, or to --kubeconfig).

Served: discovery (/api, /apis, the groups, versions and resources the file holds),
GET and LIST of every resource (label and field selectors, limit and continue, tables
with the CLI's columns per kind for kubectl get), and WATCH, which sends the stored
state and stays open (the file does not change). Every other method is refused
(405 MethodNotAllowed). A sealed resource's objects are served only with --key-file
(403 Forbidden without it). A resource recorded under several scopes is served as the
scope of all namespaces, else the first.

Given an http:// or https:// URL instead of a file, serve fetches a consistent copy of a
running process's cache from its backup endpoint (bolt.DB.BackupHandler), as 'snapshot
backup' does and with the same credentials (--backup-token-file, --backup-token, else the
user of --backup-kubeconfig, $KUBECONFIG or ~/.kube/config), into a private temporary file
removed when serve stops ($TMPDIR needs room for two copies), and serves it. With --refresh it fetches a new copy that often and
switches to it between requests: discovery and lists show the new copy, requests under way
finish on the old one, and open watches end (kubectl and client-go list again). A refresh
that fails is reported on stderr and the last good copy stays served. Without --refresh
the copy fetched at start is served until serve stops: each refresh copies the whole
file out of the running process, which is for the operator to ask for.

The server listens on loopback (127.0.0.1, a free port) unless --address says otherwise;
another address needs a bearer token (--token-file or --token), and is served over TLS
with a certificate made at start, which the kubeconfig trusts. It stops on Ctrl-C
(exit code 0); the file is read-only and stays locked for reading until then.`,
		Example: `  # Serve a file and read it with kubectl
  snapshot serve cache.db --kubeconfig snap.kubeconfig &
  kubectl --kubeconfig snap.kubeconfig get pods -A
  kubectl --kubeconfig snap.kubeconfig api-resources

  # On the network, with a token
  snapshot serve cache.db --address 10.0.0.5:6443 --token-file token --kubeconfig snap.kubeconfig

  # A running controller's cache, fetched again every 30 seconds
  kubectl port-forward pod/my-controller-0 8443 &
  snapshot serve https://localhost:8443/debug/warmcache/backup --backup-certificate-authority ca.crt \
    --refresh 30s --kubeconfig snap.kubeconfig`,
		Args:              usageArgs(cobra.ExactArgs(1)),
		ValidArgsFunction: completeFiles(1),
		RunE:              runE(o),
	}
	fl := cmd.Flags()
	fl.StringVar(&o.Address, "address", "127.0.0.1:0", "address to listen on, host:port (port 0: a free one); not loopback only with a token")
	fl.StringVar(&o.Kubeconfig, "kubeconfig", "", "write the kubeconfig to this file (mode 0600) instead of standard output")
	fl.StringVar(&o.TokenFile, "token-file", "", "file holding the bearer token clients must send (required off loopback)")
	fl.StringVar(&o.Token, "token", "", "the bearer token clients must send (visible to other users of the machine: prefer --token-file)")
	fl.DurationVar(&o.Refresh, "refresh", 0, "with a URL: fetch a new copy this often, at least "+minRefresh.String()+" (default: never)")
	before := map[string]bool{}
	fl.VisitAll(func(f *pflag.Flag) { before[f.Name] = true })
	o.source.addFlags(fl)
	fl.VisitAll(func(f *pflag.Flag) {
		if !before[f.Name] {
			f.Usage = "with a URL: " + f.Usage
		}
	})
	return cmd
}

func (o *serveOptions) Complete(cmd *cobra.Command, args []string) error {
	o.File = args[0]
	o.remote = isURL(args[0])
	if o.remote {
		o.source.URL = args[0]
	}
	cmd.Flags().Visit(func(f *pflag.Flag) {
		if f.Name == "refresh" || strings.HasPrefix(f.Name, o.source.prefix) || f.Name == "unsafe-token-over-http" {
			o.urlFlags = append(o.urlFlags, "--"+f.Name)
		}
	})
	return nil
}

func (o *serveOptions) Validate() error {
	if !o.remote && len(o.urlFlags) > 0 {
		return usageErrorf("%s applies to a backup URL, not to the file %s", strings.Join(o.urlFlags, ", "), o.File)
	}
	if o.remote {
		if err := o.source.validate(); err != nil {
			return err
		}
		if o.Refresh != 0 && o.Refresh < minRefresh {
			return usageErrorf("--refresh %v is too short: at least %v (each refresh copies the whole file)", o.Refresh, minRefresh)
		}
	}
	if o.Token != "" && o.TokenFile != "" {
		return usageErrorf("give --token or --token-file, not both")
	}
	o.token = o.Token
	if o.TokenFile != "" {
		b, err := os.ReadFile(o.TokenFile)
		if err != nil {
			return usageErrorf("--token-file: %v", pathCause(err))
		}
		if o.token = strings.TrimSpace(string(b)); o.token == "" {
			return usageErrorf("--token-file %s is empty", o.TokenFile)
		}
	}
	host, _, err := net.SplitHostPort(o.Address)
	if err != nil {
		return usageErrorf("--address %q: %v", o.Address, err)
	}
	o.loopback = isLoopback(host)
	if !o.loopback && o.token == "" {
		return withHint(usageErrorf("--address %s is not loopback: serving a cache file there needs a token", o.Address),
			"Give --token-file with the token clients must send (it goes into the kubeconfig), or serve on 127.0.0.1.")
	}
	return nil
}

// isLoopback reports whether host names the loopback interface only.
func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func (o *serveOptions) Run(ctx context.Context) (err error) {
	o.stderr = &lockedWriter{w: o.env.Stderr}
	sw := &copySwitch{}
	var dir string // of the fetched copies
	// What serve opened is closed, and the copies removed, before it
	// returns: the current copy once the server is stopped, retired
	// ones once their last request ended.
	defer func() {
		if c := sw.swap(nil); c != nil {
			<-c.closed
			if c.closeErr != nil && err == nil {
				err = c.closeErr
			}
		}
		o.copies.Wait()
		if dir != "" {
			_ = os.RemoveAll(dir)
		}
	}()
	var client *backupClient
	if o.remote {
		if client, err = o.source.connect(o.env); err != nil {
			return err
		}
		defer client.Close()
		// Private: the copy holds every cached object, Secrets included.
		if dir, err = os.MkdirTemp("", "snapshot-serve-*"); err != nil {
			return fmt.Errorf("create a directory for the copies of %s: %w", o.source.URL, err)
		}
		c, err := o.fetchCopy(ctx, client, dir, true)
		if err != nil {
			return err
		}
		sw.swap(c)
	} else {
		f, h, err := o.openCopy(ctx, o.File, o.File)
		if err != nil {
			return err
		}
		sw.swap(newServedCopy(f, h, "", time.Time{}))
	}
	first := sw.current.Load()
	ln, err := net.Listen("tcp", o.Address)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", o.Address, err)
	}
	scheme := "http"
	var caPEM []byte
	if !o.loopback {
		cert, ca, err := selfSignedCert(ln.Addr().(*net.TCPAddr).IP, o.Address)
		if err != nil {
			_ = ln.Close()
			return err
		}
		ln = tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})
		scheme, caPEM = "https", ca
	}
	server := scheme + "://" + serverHost(o.Address, ln.Addr().(*net.TCPAddr))
	if err := o.writeKubeconfig(server, caPEM, defaultNamespace(first.resources)); err != nil {
		_ = ln.Close()
		return err
	}
	where := "on standard output"
	if o.Kubeconfig != "" {
		where = "in " + o.Kubeconfig
	}
	what := o.File
	switch {
	case o.remote && o.Refresh > 0:
		what = fmt.Sprintf("a copy of %s (fetched again every %v)", o.source.URL, o.Refresh)
	case o.remote:
		what = fmt.Sprintf("a copy of %s (fetched at %s)", o.source.URL, sw.current.Load().fetched.Format(time.TimeOnly))
	}
	fmt.Fprintf(o.stderr, "Serving %s read-only at %s (%s); the kubeconfig is %s. Stop with Ctrl-C.\n", what, server, plural(len(first.resources), "resource"), where)
	srv := &http.Server{
		Handler:           sw,
		ReadHeaderTimeout: 30 * time.Second,
		// Requests end with the command: watches stay open until then
		// (or until the copy they watch is replaced).
		BaseContext: func(net.Listener) context.Context { return ctx },
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	if o.remote && o.Refresh > 0 {
		// Refreshes end before the copies are closed (deferred
		// above), however serve returns.
		rctx, stop := context.WithCancel(ctx)
		refreshed := make(chan struct{})
		go func() {
			defer close(refreshed)
			o.refresh(rctx, client, dir, sw)
		}()
		defer func() {
			stop()
			<-refreshed
		}()
	}
	select {
	case err := <-done:
		return fmt.Errorf("serve %s: %w", o.File, err)
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil {
		_ = srv.Close()
	}
	if err := <-done; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve %s: %w", o.File, err)
	}
	fmt.Fprintln(o.stderr, "Stopped.")
	return nil
}

// serverHost is the host:port clients reach the listener at: the host of
// --address (a name stays a name), the port the listener got.
func serverHost(address string, addr *net.TCPAddr) string {
	host, _, _ := net.SplitHostPort(address)
	if host == "" || net.ParseIP(host) != nil && net.ParseIP(host).IsUnspecified() {
		if h, err := os.Hostname(); err == nil {
			host = h
		}
	}
	return net.JoinHostPort(host, fmt.Sprint(addr.Port))
}

// defaultNamespace is the namespace of the kubeconfig's context: the one
// a namespace-scoped resource was recorded for, else "default".
func defaultNamespace(infos []inspect.ResourceInfo) string {
	for _, info := range infos {
		if info.Identity.Namespace != "" {
			return info.Identity.Namespace
		}
	}
	return "default"
}

// writeKubeconfig writes a kubeconfig for the server at url (trusting
// caPEM, with the token) to --kubeconfig or standard output.
func (o *serveOptions) writeKubeconfig(url string, caPEM []byte, namespace string) error {
	const name = "snapshot"
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[name] = &clientcmdapi.Cluster{Server: url, CertificateAuthorityData: caPEM}
	cfg.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: o.token}
	cfg.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name, Namespace: namespace}
	cfg.CurrentContext = name
	b, err := clientcmd.Write(*cfg)
	if err != nil {
		return fmt.Errorf("kubeconfig: %w", err)
	}
	if o.Kubeconfig == "" {
		_, err := o.env.Stdout.Write(b)
		return err
	}
	if err := os.WriteFile(o.Kubeconfig, b, 0o600); err != nil {
		return fmt.Errorf("write --kubeconfig: %w", err)
	}
	return nil
}

// resources describes the file's resources for the server: one per
// group, version and resource. What it leaves out, and why, it writes to
// notes.
func (o *serveOptions) resources(ctx context.Context, f *snapshotFile, notes io.Writer) ([]apiserver.Resource, error) {
	var out []apiserver.Resource
	chosen := map[schema.GroupVersionResource]inspect.ResourceInfo{}
	var order []schema.GroupVersionResource
	for _, info := range f.resources {
		if err := checkReadable(f.path, info); err != nil {
			printError(notes, withHint(fmt.Errorf("not served: %w", err), "%s", "The other resources are."), "")
			continue
		}
		id := info.Identity
		gvr := schema.GroupVersionResource{Group: id.Group, Version: id.Version, Resource: id.Resource}
		prev, seen := chosen[gvr]
		switch {
		case !seen:
			order = append(order, gvr)
			chosen[gvr] = info
		case prev.Identity.Namespace != "" && id.Namespace == "":
			chosen[gvr] = info
		}
		if seen {
			fmt.Fprintf(notes, "warning: %s is recorded under several scopes; serving %s\n", displayName(info), scopeString(chosen[gvr].Identity))
		}
	}
	for _, gvr := range order {
		info := chosen[gvr]
		r, err := o.resource(ctx, f, info)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	if len(out) == 0 {
		return nil, mark(ErrNotFound, "%s holds no resource to serve", f.path)
	}
	return out, nil
}

// resource describes one recorded resource for the server.
func (o *serveOptions) resource(ctx context.Context, f *snapshotFile, info inspect.ResourceInfo) (apiserver.Resource, error) {
	id := info.Identity
	kind := id.Kind
	if kind == "" {
		kind = f.firstKind(ctx, info)
	}
	r := apiserver.Resource{
		GVR:             schema.GroupVersionResource{Group: id.Group, Version: id.Version, Resource: id.Resource},
		Kind:            kind,
		Singular:        strings.ToLower(kind),
		ShortNames:      shortNamesOf(id.Group, id.Resource),
		Categories:      categories[schema.GroupResource{Group: id.Group, Resource: id.Resource}],
		ResourceVersion: info.ResourceVersion,
		Table:           printers.NewServerTable(schema.GroupVersionKind{Group: id.Group, Version: id.Version, Kind: kind}, f.printerColumns(ctx, info)),
		Fields:          objectFields,
		FieldNames:      supportedFields(id),
	}
	if err := f.checkKeys(ctx, info); err != nil {
		if !errors.Is(err, ErrKey) {
			return r, err
		}
		k, _ := f.keys(ctx, info)
		r.Forbidden = k.describe(displayName(info)) + " (start snapshot serve with --key-file)"
	} else {
		st, err := f.store(ctx, info, true)
		if err != nil {
			return r, err
		}
		r.Store = st
	}
	r.Namespaced = f.namespaced(ctx, info)
	return r, nil
}

// categories are the categories the API server gives built-in resources:
// those kubectl get all lists.
var categories = func() map[schema.GroupResource][]string {
	all := []string{"all"}
	return map[schema.GroupResource][]string{
		{Resource: "pods"}: all, {Resource: "services"}: all, {Resource: "replicationcontrollers"}: all,
		{Group: "apps", Resource: "deployments"}: all, {Group: "apps", Resource: "replicasets"}: all,
		{Group: "apps", Resource: "statefulsets"}: all, {Group: "apps", Resource: "daemonsets"}: all,
		{Group: "batch", Resource: "jobs"}: all, {Group: "batch", Resource: "cronjobs"}: all,
		{Group: "autoscaling", Resource: "horizontalpodautoscalers"}: all,
	}
}()

// shortNamesOf are the built-in short names of a resource.
func shortNamesOf(group, resource string) []string {
	var out []string
	for short, targets := range shortNames {
		for _, t := range targets {
			if t.group == group && t.resource == resource && short != resource {
				out = append(out, short)
			}
		}
	}
	slices.Sort(out)
	return out
}
