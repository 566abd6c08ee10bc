// Package kubeserver runs a real kube-apiserver and etcd (internal/testenv,
// the binaries of internal/kubebin) holding podgen's pods, for
// informerbench: the same measurements as on its fake servers, against
// what a controller really talks to.
//
// Start creates the pods through the API (podgen's pods, their status set
// by a status update, so that the objects weigh what the fake servers'
// do) and starts a helper process: this program started again
// (MaybeServe), which makes the churns' updates through the API, a number
// of them concurrently, and runs a proxy through which the informers under
// test reach kube-apiserver. The proxy holds their connections back while
// a relist's changes are made, as the fake servers hold back their watch
// streams; Restart then compacts etcd at its current revision and restarts
// kube-apiserver, so that their resumed watches get 410 Expired.
//
// The counts of requests (Stats) come from the apiserver's audit log,
// which records each LIST and WATCH when it is received, with its
// User-Agent and query: the informers' own (InformerUserAgent), WatchList
// streams told apart by sendInitialEvents. apiserver_request_total counts
// a WATCH only when it ends and restarts from zero with kube-apiserver.
package kubeserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/warmcache/warmcache/benchmarks/internal/apiproc"
	"github.com/warmcache/warmcache/internal/testenv"
)

// InformerUserAgent is the User-Agent of the clients Config returns; Stats
// counts their requests only.
const InformerUserAgent = "informerbench-informer"

// adminUserAgent is the User-Agent of the server's own requests.
const adminUserAgent = "informerbench-admin"

// ErrServer is returned, wrapped, when the server cannot start or answer.
var ErrServer = errors.New("kubeserver")

// Options configures Start.
type Options struct {
	// Pods is the number of podgen pods to create. Required.
	Pods int
	// CreateWorkers is the number of concurrent creates. Default 16.
	CreateWorkers int
	// Workers is the number of concurrent updates of a churn. Default 16.
	Workers int
	// Dir holds etcd's data, the logs and the audit log. Default: a new
	// temporary directory, removed by Close.
	Dir string
	// Stderr receives progress and the helper's standard error. Default
	// os.Stderr.
	Stderr io.Writer
}

// Server is a running kube-apiserver, etcd and helper. Its methods are
// safe for concurrent use, except Close.
type Server struct {
	env       *testenv.Env
	admin     kubernetes.Interface
	helper    *apiproc.Process
	proxyHost string
	dir       string
	removeDir bool
	restarts  atomic.Int64
}

// Start starts etcd and kube-apiserver, creates the pods and starts the
// helper. Creating 100k pods takes minutes; a first build of the binaries
// too.
func Start(ctx context.Context, opts Options) (_ *Server, err error) {
	if opts.Pods <= 0 || opts.CreateWorkers < 0 || opts.Workers < 0 {
		return nil, fmt.Errorf("%w: %d pods, %d create workers, %d workers", ErrServer, opts.Pods, opts.CreateWorkers, opts.Workers)
	}
	if opts.CreateWorkers == 0 {
		opts.CreateWorkers = 16
	}
	if opts.Workers == 0 {
		opts.Workers = 16
	}
	if opts.Stderr == nil {
		opts.Stderr = os.Stderr
	}
	s := &Server{dir: opts.Dir}
	if s.dir == "" {
		if s.dir, err = os.MkdirTemp("", "kubeserver-"); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrServer, err)
		}
		s.removeDir = true
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, s.Close())
		}
	}()
	fmt.Fprintln(opts.Stderr, "kubeserver: starting etcd and kube-apiserver (a first run builds them: minutes)...")
	if s.env, err = testenv.Start(ctx, nil, testenv.Options{Dir: s.dir}); err != nil {
		return nil, err
	}
	cfg := s.env.RestConfig()
	cfg.UserAgent, cfg.QPS, cfg.ContentType = adminUserAgent, -1, "application/vnd.kubernetes.protobuf"
	cfg.WarningHandler = rest.NoWarnings{}
	if s.admin, err = kubernetes.NewForConfig(cfg); err != nil {
		return nil, fmt.Errorf("%w: client: %w", ErrServer, err)
	}
	if err := createPods(ctx, s.admin, opts.Pods, opts.CreateWorkers, opts.Stderr); err != nil {
		return nil, err
	}
	// The creates' history is of no use to anyone.
	if _, err := s.env.Compact(ctx); err != nil {
		return nil, err
	}
	u, err := url.Parse(cfg.Host)
	if err != nil {
		return nil, fmt.Errorf("%w: apiserver address %q: %w", ErrServer, cfg.Host, err)
	}
	hc, err := json.Marshal(helperConfig{Host: cfg.Host, Token: cfg.BearerToken, CAData: cfg.CAData,
		Upstream: u.Host, Pods: opts.Pods, Workers: opts.Workers})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrServer, err)
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("%w: find own executable: %w", ErrServer, err)
	}
	if s.helper, err = apiproc.StartChild(ctx, exe, []string{envHelper + "=" + string(hc)}, opts.Stderr); err != nil {
		return nil, fmt.Errorf("%w: helper: %w", ErrServer, err)
	}
	var addr proxyAddr
	if err := s.helper.Call(ctx, "proxy", nil, &addr); err != nil {
		return nil, err
	}
	s.proxyHost = "https://" + addr.Addr
	return s, nil
}

// Config returns a client configuration that reaches kube-apiserver
// through the proxy, as InformerUserAgent, with contentType (default
// JSON) and no client-side rate limit.
func (s *Server) Config(contentType string) *rest.Config {
	c := s.env.RestConfig()
	c.Host, c.UserAgent, c.ContentType, c.QPS = s.proxyHost, InformerUserAgent, contentType, -1
	c.WarningHandler = rest.NoWarnings{}
	return c
}

// Churn holds the informers' connections back, then makes n updates (see
// informerbench.Server) through the API and returns once the server has
// acknowledged the last; the connections stay held back until Open.
func (s *Server) Churn(ctx context.Context, n, gen, hot int) (apiproc.ChurnResult, error) {
	if err := s.helper.Call(ctx, "close", nil, nil); err != nil {
		return apiproc.ChurnResult{}, err
	}
	return s.churn(ctx, n, gen, hot)
}

func (s *Server) churn(ctx context.Context, n, gen, hot int) (apiproc.ChurnResult, error) {
	var res apiproc.ChurnResult
	q := url.Values{"updates": {fmt.Sprint(n)}, "gen": {fmt.Sprint(gen)}}
	if hot != 0 {
		q.Set("hot", fmt.Sprint(hot))
	}
	err := s.helper.Call(ctx, "churn", q, &res)
	return res, err
}

// Open lets the informers' connections through again.
func (s *Server) Open(ctx context.Context) error { return s.helper.Call(ctx, "open", nil, nil) }

// Updates returns release, which makes the n updates through the API as
// the informers watch them, Workers at a time, and returns how long the
// server took to acknowledge them; then it compacts etcd, which keeps
// only the current state (kube-apiserver's watch cache still serves the
// watches that follow).
func (s *Server) Updates(_ context.Context, n, gen, hot int) (func(context.Context) (apiproc.ChurnResult, error), error) {
	return func(ctx context.Context) (apiproc.ChurnResult, error) {
		res, err := s.churn(ctx, n, gen, hot)
		if err != nil {
			return res, err
		}
		_, err = s.env.Compact(ctx)
		return res, err
	}, nil
}

// Compact compacts etcd at its current revision when rv is "". With an
// rv, it does nothing: kube-apiserver's watch cache, not etcd, serves the
// watches that resume, and etcd's history costs disk, not the measured
// processes' memory.
func (s *Server) Compact(ctx context.Context, rv string) error {
	if rv != "" {
		return nil
	}
	_, err := s.env.Compact(ctx)
	return err
}

// Restart holds the informers' connections back, writes a ConfigMap (so
// that the compaction passes every pod watcher's resourceVersion even when
// no pod changed), compacts etcd at its current revision and restarts
// kube-apiserver, whose watch cache then begins at that revision; it
// returns once the new apiserver's watch cache of pods is ready. Every
// connection stays held back until Open, then ends; the informers' watches
// resume from a compacted resourceVersion and get 410 Expired.
func (s *Server) Restart(ctx context.Context) error {
	if err := s.helper.Call(ctx, "close", nil, nil); err != nil {
		return err
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("restart-%d", s.restarts.Add(1))}}
	if _, err := s.admin.CoreV1().ConfigMaps(metav1.NamespaceDefault).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("%w: restart: create ConfigMap: %w", ErrServer, err)
	}
	if _, err := s.env.Compact(ctx); err != nil {
		return err
	}
	if err := s.env.RestartAPIServer(ctx); err != nil {
		return err
	}
	return s.waitWatchCache(ctx)
}

// Stats returns the informers' requests for pods (InformerUserAgent) that
// the apiserver received since it started, from its audit log: LISTs,
// WATCHes and, among those, WatchLists. ResourceVersion and OpenWatches
// are not known ("" and 0).
func (s *Server) Stats(ctx context.Context) (apiproc.Stats, error) {
	var st apiproc.Stats
	for _, c := range []struct {
		verb string
		n    *int
	}{{"list", &st.Lists}, {"watch", &st.Watches}, {"watchlist", &st.WatchLists}} {
		n, err := s.env.Requests(ctx, testenv.RequestFilter{Verb: c.verb, Resource: "pods", UserAgent: InformerUserAgent})
		if err != nil {
			return st, err
		}
		*c.n = n
	}
	return st, nil
}

// CPU returns the CPU time of etcd, kube-apiserver and the helper so far:
// of every child of this process. A restarted kube-apiserver's count
// begins again.
func (s *Server) CPU() (time.Duration, error) { return childrenCPU() }

// Close stops the helper, kube-apiserver and etcd, and removes the
// directory if Start made it.
func (s *Server) Close() error {
	var errs []error
	if s.helper != nil {
		errs = append(errs, s.helper.Close())
	}
	if s.env != nil {
		s.env.Stop()
	}
	if s.removeDir {
		errs = append(errs, os.RemoveAll(s.dir))
	}
	return errors.Join(errs...)
}

// Dir returns the directory of etcd's data and the processes' logs.
func (s *Server) Dir() string { return s.dir }
