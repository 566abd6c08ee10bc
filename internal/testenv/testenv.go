// Package testenv runs a real etcd and kube-apiserver on loopback for
// warmcache's end-to-end tests.
//
// Start launches etcd and kube-apiserver on free 127.0.0.1 ports in a private
// directory, waits until the apiserver's /readyz answers, and returns an Env
// whose RestConfig authenticates as a cluster admin. The binaries come from
// package kubebin, which builds them on first use (minutes) and caches them
// outside the repository; a build failure fails Start loudly.
//
// The apiserver runs with its 1.36 defaults (feature gates, watch cache,
// WatchList) except that: authorization is AlwaysAllow (unless
// ExtraAPIServerArgs sets --authorization-mode); authentication is a
// token file holding one admin token; service-account tokens are signed with
// a generated RSA key; the serving certificate is self-signed through
// --cert-dir; the ServiceAccount admission plugin is disabled (no controller
// manager creates default service accounts, so pods could not be created
// otherwise); and --etcd-compaction-interval=0, so etcd is compacted only
// when Compact is called. It also writes an audit log of its LIST and WATCH
// requests (audit.log in the environment's directory), from which Requests
// counts the requests of one namespace or client. Options.ExtraAPIServerArgs
// adds or overrides flags.
//
// Shared gives a package's tests one environment, started on first use and
// stopped from TestMain; each test works in a namespace of its own
// (Env.Namespace) and may run in parallel. A test that restarts, compacts or
// rewinds the processes, needs other flags, or asserts on the server's
// global counters starts its own with Start.
//
// Both processes run in their own process groups; Stop kills the groups, and
// on Linux they also receive SIGKILL when the test process dies
// (Pdeathsig). Their output goes to etcd.log and kube-apiserver.log in the
// environment's directory; with a testing.TB, the tails of both logs are
// printed when the test has failed.
package testenv

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/warmcache/warmcache/internal/kubebin"
)

// Sentinel errors; returned errors wrap one of them with the operation
// concerned. Test them with errors.Is.
var (
	// ErrInvalidOptions reports an Options value Start cannot use.
	ErrInvalidOptions = errors.New("testenv: invalid options")
	// ErrBinaries reports that the kube-apiserver or etcd binary could not
	// be built or found.
	ErrBinaries = errors.New("testenv: binaries unavailable")
	// ErrStart reports that etcd or kube-apiserver did not start or did
	// not become ready; the error carries the tails of their logs.
	ErrStart = errors.New("testenv: start failed")
	// ErrStopped reports a call on an Env after Stop.
	ErrStopped = errors.New("testenv: environment stopped")
	// ErrMetrics reports that /metrics or the audit log could not be read
	// or parsed.
	ErrMetrics = errors.New("testenv: metrics unavailable")
	// ErrEtcd reports a failed etcd operation (Compact).
	ErrEtcd = errors.New("testenv: etcd operation failed")
	// ErrShared reports a call that would restart, reconfigure or rewind
	// the processes of an environment other tests share (Shared).
	ErrShared = errors.New("testenv: environment is shared")
)

// Options configures Start. The zero value is a usable environment.
type Options struct {
	// Binaries are the kube-apiserver and etcd binaries to run. Both or
	// neither must be set. Default: kubebin.Ensure(ctx, Kubebin), which
	// builds them on first use.
	Binaries kubebin.Paths

	// Kubebin configures the build when Binaries is empty. Default: the
	// zero kubebin.Options (kubebin.DefaultKubernetesVersion, default
	// cache directory).
	Kubebin kubebin.Options

	// ExtraAPIServerArgs are appended to kube-apiserver's command line
	// after the defaults; for a flag given twice the later value wins
	// (list flags accumulate). Each must start with "--", for example
	// "--watch-cache=false" or "--feature-gates=WatchList=false". Flags
	// testenv depends on (--secure-port, --bind-address, --etcd-servers,
	// --cert-dir, --token-auth-file, --service-account-*) must not be
	// overridden. An --authorization-mode here replaces the default
	// AlwaysAllow (for example "--authorization-mode=RBAC"). Default: none.
	ExtraAPIServerArgs []string

	// Dir holds the processes' data, certificates and logs. It must
	// exist. Default: tb.TempDir() when Start gets a testing.TB,
	// otherwise a new temporary directory that Stop removes.
	Dir string

	// StartTimeout bounds each wait for a process to become ready, in
	// Start and RestartAPIServer, in addition to the context. It does not
	// bound the binary build. Default: 60s.
	StartTimeout time.Duration
}

const defaultStartTimeout = 60 * time.Second

// complete validates o and fills in defaults other than Dir.
func (o Options) complete() (Options, error) {
	if (o.Binaries.KubeAPIServer == "") != (o.Binaries.Etcd == "") {
		return o, fmt.Errorf("%w: Binaries must set both KubeAPIServer and Etcd, or neither", ErrInvalidOptions)
	}
	for _, a := range o.ExtraAPIServerArgs {
		if !strings.HasPrefix(a, "--") {
			return o, fmt.Errorf("%w: ExtraAPIServerArgs entry %q does not start with --", ErrInvalidOptions, a)
		}
	}
	if o.Dir != "" {
		fi, err := os.Stat(o.Dir)
		if err != nil || !fi.IsDir() {
			return o, fmt.Errorf("%w: Dir %q is not an existing directory", ErrInvalidOptions, o.Dir)
		}
	}
	switch {
	case o.StartTimeout < 0:
		return o, fmt.Errorf("%w: StartTimeout %v is negative", ErrInvalidOptions, o.StartTimeout)
	case o.StartTimeout == 0:
		o.StartTimeout = defaultStartTimeout
	}
	return o, nil
}

// Env is a running etcd and kube-apiserver pair. Its methods are safe for
// concurrent use. Stop (or the end of the test given to Start) ends both
// processes; after Stop, methods that talk to the processes return
// ErrStopped.
type Env struct {
	dir       string
	removeDir bool // Stop removes dir: Start created it
	binaries  kubebin.Paths
	timeout   time.Duration
	etcdURL   string   // http://127.0.0.1:<client port>
	etcdArgs  []string // fixed once started
	apiArgs   []string // fixed once started
	config    *rest.Config
	client    *http.Client // authenticated, verifies the apiserver's CA
	shared    bool         // set by Shared before any test sees e

	mu        sync.Mutex // guards the fields below
	etcd      *process
	apiserver *process
	started   bool // Start succeeded; log tails are printed on failure
	stopped   bool
}

// Start launches etcd and kube-apiserver and waits until the apiserver is
// ready. ctx bounds the start only (binary build, readiness waits); the
// processes run until Stop.
//
// With a non-nil tb, Stop is registered with tb.Cleanup (so the processes
// end even if the test fails or panics), the default directory is
// tb.TempDir(), and the log tails are printed if the test has failed. With a
// nil tb (for example in TestMain, to share one environment across a
// package's tests) the caller must call Stop.
func Start(ctx context.Context, tb testing.TB, opts Options) (*Env, error) {
	if tb != nil {
		tb.Helper()
	}
	o, err := opts.complete()
	if err != nil {
		return nil, err
	}
	logger := klog.FromContext(ctx)
	if o.Binaries == (kubebin.Paths{}) {
		begin := time.Now()
		o.Binaries, err = kubebin.Ensure(ctx, o.Kubebin)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrBinaries, err)
		}
		if took := time.Since(begin); tb != nil && took > time.Second {
			tb.Logf("testenv: built kube-apiserver and etcd in %v", took.Round(time.Second))
		}
	}
	e := &Env{binaries: o.Binaries, timeout: o.StartTimeout, dir: o.Dir}
	if e.dir == "" {
		if tb != nil {
			e.dir = tb.TempDir()
		} else {
			if e.dir, err = os.MkdirTemp("", "warmcache-testenv-"); err != nil {
				return nil, fmt.Errorf("%w: create directory: %w", ErrStart, err)
			}
			e.removeDir = true
		}
	}
	if tb != nil {
		// Registered after tb.TempDir's own cleanup, so it runs first:
		// the processes die before their directory is removed.
		tb.Cleanup(func() {
			if tb.Failed() && e.isStarted() {
				tb.Logf("testenv: process logs in %s\n%s", e.dir, e.LogTails())
			}
			e.Stop()
		})
	}
	begin := time.Now()
	if err := e.start(ctx, o.ExtraAPIServerArgs); err != nil {
		tails := e.LogTails()
		e.Stop()
		return nil, fmt.Errorf("%w\n%s", err, tails)
	}
	e.mu.Lock()
	e.started = true
	e.mu.Unlock()
	elapsed := time.Since(begin).Round(time.Millisecond)
	logger.V(1).Info("Test environment ready", "apiserver", e.config.Host, "etcd", e.etcdURL, "dir", e.dir, "elapsed", elapsed)
	if tb != nil {
		tb.Logf("testenv: kube-apiserver ready at %s in %v (dir %s)", e.config.Host, elapsed, e.dir)
	}
	return e, nil
}

// RestConfig returns a new copy of a client configuration for the
// apiserver: cluster-admin bearer token, TLS verified against the CA the
// apiserver generated, and a client-side rate limit high enough not to
// throttle tests (QPS 1000, burst 2000). It stays valid across
// RestartAPIServer.
func (e *Env) RestConfig() *rest.Config { return rest.CopyConfig(e.config) }

// Dir returns the environment's directory, which holds etcd.log and
// kube-apiserver.log.
func (e *Env) Dir() string { return e.dir }

// EtcdEndpoint returns etcd's client URL.
func (e *Env) EtcdEndpoint() string { return e.etcdURL }

// RestartAPIServer kills kube-apiserver (SIGKILL, as in a crash) and starts
// it again with the same flags, port and etcd, then waits until it is ready.
// Clients see their connections and watches break. The restarted apiserver
// has an empty watch cache, so watches from resourceVersions older than its
// start answer 410 Gone, and its metrics start from zero.
//
// On a shared environment (Shared) it returns ErrShared.
func (e *Env) RestartAPIServer(ctx context.Context) error {
	if err := e.killForRestart("restart kube-apiserver", false); err != nil {
		return err
	}
	return e.restartAPIServer(ctx)
}

// restartAPIServer starts kube-apiserver again, after it was killed, with
// its recorded flags, port and etcd, and waits until it is ready
// (RestartAPIServer, restartBoth). It returns ErrStopped, starting
// nothing, if Stop ran since the kill.
func (e *Env) restartAPIServer(ctx context.Context) error {
	p, err := e.restartProcess(apiserverName, e.binaries.KubeAPIServer, e.apiArgs, func(p *process) { e.apiserver = p })
	if err != nil {
		return err
	}
	if err := e.waitAPIServer(ctx, p, e.client); err != nil {
		return fmt.Errorf("%w: restart kube-apiserver: %w\n%s", ErrStart, err, e.LogTails())
	}
	return nil
}

// restartProcess starts process name again, after it was killed, from
// binary with args, and records it with set (called with e.mu held). It
// returns ErrStopped, starting nothing, if Stop ran since the kill.
func (e *Env) restartProcess(name, binary string, args []string, set func(*process)) (*process, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.stopped {
		return nil, fmt.Errorf("restart %s: %w", name, ErrStopped)
	}
	p, err := startProcess(name, binary, args, e.dir)
	if err != nil {
		return nil, fmt.Errorf("%w: restart %s: %w", ErrStart, name, err)
	}
	set(p)
	return p, nil
}

// Stop kills kube-apiserver and etcd (their whole process groups) and waits
// for them to exit, then removes the directory if Start created it. It is
// idempotent. On a shared environment it does nothing: Shared stops it
// after the last test.
func (e *Env) Stop() {
	if e.shared {
		return
	}
	e.stop()
}

func (e *Env) stop() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.stopped {
		return
	}
	e.stopped = true
	e.apiserver.kill()
	e.etcd.kill()
	if e.client != nil {
		e.client.CloseIdleConnections()
	}
	if e.removeDir {
		_ = os.RemoveAll(e.dir)
	}
}

// killForRestart kills kube-apiserver, and etcd too if etcd, for op, whose
// caller starts them again. It kills nothing and returns ErrShared on a
// shared environment, ErrStopped after Stop.
func (e *Env) killForRestart(op string, etcd bool) error {
	if err := e.refuseShared(op); err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.stopped {
		return fmt.Errorf("%s: %w", op, ErrStopped)
	}
	e.apiserver.kill()
	if etcd {
		e.etcd.kill()
	}
	return nil
}

// refuseShared returns ErrShared for op on a shared environment.
func (e *Env) refuseShared(op string) error {
	if e.shared {
		return fmt.Errorf("%s: %w: start an environment of the test's own", op, ErrShared)
	}
	return nil
}

func (e *Env) isStarted() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.started
}

// processes returns the current processes, or ErrStopped.
func (e *Env) processes() (etcd, apiserver *process, err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.stopped {
		return nil, nil, ErrStopped
	}
	return e.etcd, e.apiserver, nil
}

// LogTails returns the last lines of etcd's and kube-apiserver's logs, for
// a failure report: a test sharing an environment started without a
// testing.TB prints them when it fails.
func (e *Env) LogTails() string {
	var b strings.Builder
	for _, name := range []string{etcdName, apiserverName} {
		fmt.Fprintf(&b, "--- tail of %s ---\n%s\n", logFile(e.dir, name), tailFile(logFile(e.dir, name), logTailBytes))
	}
	return b.String()
}
