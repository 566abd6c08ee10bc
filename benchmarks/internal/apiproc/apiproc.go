// Package apiproc runs internal/fakeapi, or a genserver, in a child process
// for the informer benchmarks, so that the benchmark process's heap holds
// the informers only, not the fake API server's objects.
//
// The child is the benchmark's own executable (a benchmark program or a go
// test binary) started again with an environment variable; MaybeServe, the
// first thing its main or TestMain calls, turns it into the server. It
// generates the pods (internal/podgen), serves the Kubernetes API for pods
// on a loopback port and a small control API for the benchmark: churn
// (apply updates while the watch streams are held back), open (release
// them, so that the informers receive the updates as fast as they can take
// them, without waiting for the producer), compact, restart (410 for every
// resumed watch) and stats. The child
// exits when its standard input closes, so it never outlives the parent.
package apiproc

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/rest"

	"github.com/warmcache/warmcache/benchmarks/internal/genserver"
	"github.com/warmcache/warmcache/benchmarks/internal/procmem"
)

// envPods is the environment variable that makes a process the server; its
// value is the number of pods to serve.
const envPods = "WARMCACHE_BENCH_APISERVER_PODS"

// ErrServer is returned when the child fails to start or answers a control
// request with an error.
var ErrServer = errors.New("apiproc: server")

// Options configures Start.
type Options struct {
	// Pods is the number of podgen pods the server starts with. Required.
	Pods int
	// Stderr receives the child's standard error. Default: os.Stderr.
	Stderr io.Writer
	// Server is the server the child runs: ServerFake (default) or
	// ServerGen.
	Server string
}

// The servers a child can run.
const (
	// ServerFake is internal/fakeapi on internal/fakesource, which keeps
	// every pod and every update on its heap.
	ServerFake = "fakeapi"
	// ServerGen is a genserver, which generates each pod when it serves
	// it and keeps 16 bytes per pod and 24 per update.
	ServerGen = "genserver"
)

// Servers lists the servers a child can run, the default first.
var Servers = []string{ServerFake, ServerGen}

// envServer is the environment variable that names the child's server.
const envServer = "WARMCACHE_BENCH_APISERVER"

// Process is a running child server. Its methods are safe for concurrent
// use, except Close.
type Process struct {
	// URL is the server's base URL.
	URL    string
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	client *http.Client
	waited chan struct{}
	mu     sync.Mutex
	err    error // the child's exit status, once waited
}

// Start starts the child and returns once it serves, which takes about
// 150 µs per pod on an idle machine (generating them). ctx bounds the
// start only.
func Start(ctx context.Context, opts Options) (*Process, error) {
	if opts.Pods <= 0 {
		return nil, fmt.Errorf("%w: %d pods", ErrServer, opts.Pods)
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("%w: find own executable: %w", ErrServer, err)
	}
	switch opts.Server {
	case "":
		opts.Server = ServerFake
	case ServerFake, ServerGen:
	default:
		return nil, fmt.Errorf("%w: unknown server %q (want one of %v)", ErrServer, opts.Server, Servers)
	}
	return StartChild(ctx, exe, []string{envPods + "=" + strconv.Itoa(opts.Pods), envServer + "=" + opts.Server}, opts.Stderr)
}

// StartChild starts exe (this program, to be turned into a server by the
// environment variables env that its MaybeServe-like function reads) with
// env added to this process's environment, and returns once the child has
// written its control URL as the first line of its standard output (see
// ServeLoopback). The child's standard error goes to stderr (default
// os.Stderr); it must exit when its standard input closes (ParentGone).
// ctx bounds the start only.
func StartChild(ctx context.Context, exe string, env []string, stderr io.Writer) (*Process, error) {
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = stderr
	if cmd.Stderr == nil {
		cmd.Stderr = os.Stderr
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrServer, err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrServer, err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("%w: start %s: %w", ErrServer, exe, err)
	}
	p := &Process{cmd: cmd, stdin: stdin, client: &http.Client{}, waited: make(chan struct{})}
	urlc := ReadURL(stdout)
	go func() {
		err := cmd.Wait()
		p.mu.Lock()
		p.err = err
		p.mu.Unlock()
		close(p.waited)
	}()
	select {
	case u := <-urlc:
		if !strings.HasPrefix(u, "http://") {
			_ = p.Close()
			return nil, fmt.Errorf("%w: child did not report its URL (got %q)", ErrServer, u)
		}
		p.URL = u
		return p, nil
	case <-ctx.Done():
		_ = p.Close()
		return nil, fmt.Errorf("%w: start: %w", ErrServer, ctx.Err())
	}
}

// Pid returns the child's process id, for reading its CPU time and
// memory from /proc.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// ReadURL sends the first line of r, a child's standard output on which
// ServeLoopback writes its URL, to the channel it returns, trimmed ("" if
// r ends first), then drains r so that the child never blocks writing.
func ReadURL(r io.Reader) <-chan string {
	urlc := make(chan string, 1)
	go func() {
		br := bufio.NewReader(r)
		line, _ := br.ReadString('\n')
		urlc <- strings.TrimSpace(line)
		_, _ = io.Copy(io.Discard, br)
	}()
	return urlc
}

// Config returns a client configuration for the server with contentType
// and client-side rate limiting off.
func (p *Process) Config(contentType string) *rest.Config {
	return &rest.Config{Host: p.URL, ContentConfig: rest.ContentConfig{ContentType: contentType}, QPS: -1}
}

// ChurnResult describes the updates Churn applied.
type ChurnResult struct {
	// FirstRV and LastRV are the resourceVersions of the first and last
	// update.
	FirstRV string `json:"firstRV"`
	LastRV  string `json:"lastRV"`
	// Seconds is how long the server took to apply them.
	Seconds float64 `json:"seconds"`
}

// Churn holds back every watch stream, then updates n pods, each setting
// the annotation GenerationAnnotation to gen, in the order of
// genserver.NewChurnOrder(pods, hot) on either server: with hot 0, pod
// (k*stride) mod pods for the k-th, spread over all of them; with hot > 0,
// cycling over a hot set of hot distinct pods, spread the same way (a
// rollout's skew), so that each changes about n/hot times. A hot set
// above the pods, or negative, is refused. The watches stay held back
// until Open.
func (p *Process) Churn(ctx context.Context, n, gen, hot int) (ChurnResult, error) {
	var res ChurnResult
	q := url.Values{"updates": {strconv.Itoa(n)}, "gen": {strconv.Itoa(gen)}}
	if hot != 0 {
		q.Set("hot", strconv.Itoa(hot))
	}
	err := p.call(ctx, "churn", q, &res)
	return res, err
}

// Open releases the watch streams Churn held back.
func (p *Process) Open(ctx context.Context) error { return p.call(ctx, "open", nil, nil) }

// Compact discards the source's history before rv ("" for its current
// resourceVersion), which frees the memory of past updates.
func (p *Process) Compact(ctx context.Context, rv string) error {
	return p.call(ctx, "compact", url.Values{"rv": {rv}}, nil)
}

// Restart simulates an apiserver restart: every open watch ends and the
// whole history is compacted, so that an informer resuming its watch gets
// 410 Expired and relists. Watches held back by Churn stay held back until
// Open.
func (p *Process) Restart(ctx context.Context) error { return p.call(ctx, "restart", nil, nil) }

// Stats are the server's counters.
type Stats struct {
	ResourceVersion string `json:"resourceVersion"`
	Lists           int    `json:"lists"`
	Watches         int    `json:"watches"`
	WatchLists      int    `json:"watchLists"`
	OpenWatches     int    `json:"openWatches"`
}

// Stats returns the server's counters.
func (p *Process) Stats(ctx context.Context) (Stats, error) {
	var st Stats
	err := p.call(ctx, "stats", nil, &st)
	return st, err
}

// Call sends the control request op with the query q to the child and
// decodes its JSON answer into out (nil: discarded).
func (p *Process) Call(ctx context.Context, op string, q url.Values, out interface{}) error {
	return p.call(ctx, op, q, out)
}

func (p *Process) call(ctx context.Context, op string, q url.Values, out interface{}) error {
	if err := genserver.Control(ctx, p.client, p.URL, op, q, out); err != nil {
		return fmt.Errorf("%w: %w", ErrServer, err)
	}
	return nil
}

// closeTimeout is how long Close waits for the child to exit after its
// standard input closed before it kills it.
const closeTimeout = 10 * time.Second

// Close stops the child (closing its standard input, then killing it if it
// has not exited within closeTimeout) and waits for it.
func (p *Process) Close() error {
	_ = p.stdin.Close()
	select {
	case <-p.waited:
	case <-time.After(closeTimeout):
		_ = p.cmd.Process.Kill()
		<-p.waited
	}
	p.client.CloseIdleConnections()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.err != nil {
		return fmt.Errorf("%w: child: %w", ErrServer, p.err)
	}
	return nil
}

// Updates applies n updates as Churn does, holding back the watch
// streams, and returns release, which opens them and returns what Churn
// returned: the watchers then receive the backlog as fast as they take
// it.
func (p *Process) Updates(ctx context.Context, n, gen, hot int) (func(context.Context) (ChurnResult, error), error) {
	res, err := p.Churn(ctx, n, gen, hot)
	if err != nil {
		return nil, errors.Join(err, p.Open(ctx))
	}
	return func(ctx context.Context) (ChurnResult, error) { return res, p.Open(ctx) }, nil
}

// CPU returns the CPU time the child has used.
func (p *Process) CPU() (time.Duration, error) { return procmem.CPU(p.Pid()) }
