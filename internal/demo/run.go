package demo

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/warmcache/warmcache/internal/democtl"
	"github.com/warmcache/warmcache/internal/kubebin"
	"github.com/warmcache/warmcache/internal/testenv"
)

// Defaults of Options.
const (
	DefaultPods           = 20000
	DefaultChangeFraction = 0.01
	DefaultWorkers        = 16
)

// controllerPackage is the command the demo builds and runs, cold then warm.
const controllerPackage = "./internal/democtl/cmd/democtl"

// Options configures Run. The zero value runs the full demo.
type Options struct {
	// Pods is the number of pods created. Default DefaultPods.
	Pods int
	// ChangeFraction is the fraction of pods changed between the runs
	// (half updated, a quarter deleted, as many created). Default
	// DefaultChangeFraction.
	ChangeFraction float64
	// Workers is the number of concurrent requests that create and change
	// pods. Default DefaultWorkers.
	Workers int
	// ModuleDir is warmcache's module root, where the controller is
	// built and the snapshot CLI run. Default: the module of the
	// working directory (go env GOMOD).
	ModuleDir string
	// Controller is a built internal/democtl/cmd/democtl. Default: built
	// into the working directory with go build.
	Controller string
	// Keep keeps the working directory (binaries, logs, cache file,
	// control plane data) instead of removing it. Default false.
	Keep bool
	// Out receives the table and the snapshot CLI's output. Default
	// os.Stdout.
	Out io.Writer
	// Progress receives progress lines. Default os.Stderr.
	Progress io.Writer
}

func (o Options) withDefaults() (Options, error) {
	switch {
	case o.Pods < 0 || o.Workers < 0:
		return o, fmt.Errorf("%w: negative Pods %d or Workers %d", ErrInvalidOptions, o.Pods, o.Workers)
	case o.ChangeFraction < 0 || o.ChangeFraction > 0.5:
		return o, fmt.Errorf("%w: ChangeFraction %v is not in [0, 0.5]", ErrInvalidOptions, o.ChangeFraction)
	}
	o.Pods = cmp.Or(o.Pods, DefaultPods)
	o.ChangeFraction = cmp.Or(o.ChangeFraction, DefaultChangeFraction)
	o.Workers = cmp.Or(o.Workers, DefaultWorkers)
	o.Out = cmp.Or[io.Writer](o.Out, os.Stdout)
	o.Progress = cmp.Or[io.Writer](o.Progress, os.Stderr)
	return o, nil
}

// demo is one run of the demo.
type demo struct {
	o     Options
	dir   string
	env   *testenv.Env
	cs    kubernetes.Interface
	kcfg  string // kubeconfig for the controller
	cache string // the controller's cache file
	start time.Time
}

// Run runs the demo: it builds (or reuses) kube-apiserver and etcd and the
// demo controller (internal/democtl), starts a local control plane, creates
// the pods, runs the controller cold on an empty cache file, stops it, changes some pods,
// runs it warm on the same file, and writes the side-by-side table and the
// snapshot CLI's view of the file to Out. Everything it started is
// stopped, and its working directory removed (unless Keep), when it
// returns, also on error or cancellation.
func Run(ctx context.Context, opts Options) (err error) {
	o, err := opts.withDefaults()
	if err != nil {
		return err
	}
	d := &demo{o: o, start: time.Now()}
	if d.dir, err = os.MkdirTemp("", "warmcache-demo-"); err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	defer func() {
		if d.env != nil {
			d.env.Stop()
		}
		if o.Keep {
			d.progress("kept the working directory %s", d.dir)
		} else if rerr := os.RemoveAll(d.dir); rerr != nil {
			err = errors.Join(err, fmt.Errorf("demo: clean up: %w", rerr))
		}
	}()
	return d.run(ctx)
}

func (d *demo) progress(format string, args ...any) {
	fmt.Fprintf(d.o.Progress, "demo %6s  %s\n", time.Since(d.start).Round(time.Second), fmt.Sprintf(format, args...))
}

func (d *demo) run(ctx context.Context) error {
	d.progress("[1/7] building or reusing kube-apiserver and etcd (a first build takes minutes)")
	bins, err := kubebin.Ensure(ctx, kubebin.Options{})
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	d.progress("[2/7] building the controller (internal/democtl, the workqueue example instrumented)")
	if err := d.buildController(ctx); err != nil {
		return err
	}
	d.progress("[3/7] starting etcd and kube-apiserver")
	if err := os.Mkdir(filepath.Join(d.dir, "env"), 0o700); err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	if d.env, err = testenv.Start(ctx, nil, testenv.Options{Binaries: bins, Dir: filepath.Join(d.dir, "env")}); err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	cfg := d.env.RestConfig()
	cfg.ContentType = runtime.ContentTypeProtobuf
	cfg.WarningHandler = rest.NoWarnings{} // podgen's pods repeat port names
	if d.cs, err = kubernetes.NewForConfig(cfg); err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	d.kcfg = filepath.Join(d.dir, "kubeconfig")
	if err := WriteKubeconfig(d.env.RestConfig(), d.kcfg); err != nil {
		return err
	}
	d.cache = filepath.Join(d.dir, "pods.db")

	d.progress("[4/7] creating %d pods with %d concurrent requests", d.o.Pods, d.o.Workers)
	if err := d.createPods(ctx); err != nil {
		return err
	}
	d.progress("[5/7] running the controller cold, on an empty cache file")
	cold, err := d.runController(ctx, "cold")
	if err != nil {
		return err
	}
	n := int(float64(d.o.Pods) * d.o.ChangeFraction)
	d.progress("[6/7] changing %d pods while it is stopped, then running it warm on the same file", n)
	if err := d.change(ctx, n); err != nil {
		return err
	}
	warm, err := d.runController(ctx, "warm")
	if err != nil {
		return err
	}
	fi, err := os.Stat(d.cache)
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}

	d.progress("[7/7] done")
	fmt.Fprintf(d.o.Out, "\nwarmcache demo: %d pods on a local kube-apiserver; the workqueue controller (internal/democtl)\n", d.o.Pods)
	fmt.Fprintf(d.o.Out, "ran cold on an empty cache file, was stopped, %d pods changed, then it ran warm on the same file.\n\n", n)
	if err := WriteTable(d.o.Out, cold, warm, fi.Size()); err != nil {
		return err
	}
	fmt.Fprintf(d.o.Out, "\nThe cache file, as the snapshot CLI sees it (go run ./cmd/snapshot info FILE):\n\n")
	d.snapshotInfo(ctx)
	return nil
}

// moduleDir returns the warmcache module root.
func (d *demo) moduleDir(ctx context.Context) (string, error) {
	if d.o.ModuleDir != "" {
		return d.o.ModuleDir, nil
	}
	out, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	gomod := strings.TrimSpace(string(out))
	if err != nil || gomod == "" || gomod == os.DevNull {
		return "", fmt.Errorf("%w: cannot find warmcache's module (run from the repository, or set ModuleDir): %v", ErrInvalidOptions, err)
	}
	return filepath.Dir(gomod), nil
}

func (d *demo) buildController(ctx context.Context) error {
	if d.o.Controller != "" {
		return nil
	}
	mod, err := d.moduleDir(ctx)
	if err != nil {
		return err
	}
	d.o.Controller = filepath.Join(d.dir, "democtl")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", d.o.Controller, controllerPackage)
	cmd.Dir = mod
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%w: go build %s: %w\n%s", ErrController, controllerPackage, err, out)
	}
	return nil
}

func (d *demo) createPods(ctx context.Context) error {
	begin := time.Now()
	var done atomic.Int64
	stop := Every(ctx, 2*time.Second, func() {
		n := done.Load()
		d.progress("      %6d/%d pods created (%.0f/s)", n, d.o.Pods, float64(n)/time.Since(begin).Seconds())
	})
	err := CreatePods(ctx, d.cs, d.o.Pods, PodOptions{Workers: d.o.Workers, Progress: func(n int) { done.Store(int64(n)) }})
	stop()
	if err != nil {
		return err
	}
	d.progress("      %d pods created in %v", d.o.Pods, time.Since(begin).Round(100*time.Millisecond))
	return nil
}

// Every calls fn every period, in a goroutine of its own, until ctx ends
// or the returned stop is called; stop waits for the goroutine to return.
func Every(ctx context.Context, period time.Duration, fn func()) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(period)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				fn()
			}
		}
	})
	return func() { cancel(); wg.Wait() }
}

// listPods returns every pod's key and resourceVersion.
func (d *demo) listPods(ctx context.Context) (map[string]string, error) {
	out := map[string]string{}
	opts := metav1.ListOptions{Limit: 5000}
	for {
		l, err := d.cs.CoreV1().Pods("").List(ctx, opts)
		if err != nil {
			return nil, fmt.Errorf("%w: list pods: %w", ErrAPI, err)
		}
		for i := range l.Items {
			out[l.Items[i].Namespace+"/"+l.Items[i].Name] = l.Items[i].ResourceVersion
		}
		if l.Continue == "" {
			return out, nil
		}
		opts.Continue = l.Continue
	}
}

// podRequests returns the apiserver's LIST requests and WatchList streams
// for pods so far.
func (d *demo) podRequests(ctx context.Context) (lists, streams float64, err error) {
	if lists, err = d.env.ListRequests(ctx, "pods"); err != nil {
		return 0, 0, fmt.Errorf("demo: %w", err)
	}
	streams, err = d.env.MetricSum(ctx, "apiserver_watch_list_duration_seconds_count", map[string]string{"resource": "pods"})
	if err != nil {
		return 0, 0, fmt.Errorf("demo: %w", err)
	}
	return lists, streams, nil
}

// runController runs the controller until its handler has seen every pod at
// its current resourceVersion and it has measured its steady heap, then
// stops it and returns its stats.
func (d *demo) runController(ctx context.Context, name string) (RunResult, error) {
	var r RunResult
	want, err := d.listPods(ctx) // before counting: this LIST is the demo's
	if err != nil {
		return r, err
	}
	lists0, streams0, err := d.podRequests(ctx)
	if err != nil {
		return r, err
	}
	stats := filepath.Join(d.dir, name+"-stats.json")
	begin := time.Now()
	p, err := StartProcess(ProcessOptions{
		Command:     d.o.Controller,
		Args:        []string{"--kubeconfig", d.kcfg, "--cache-file", d.cache, "--stats-file", stats, "--event-log", "-"},
		LogFile:     filepath.Join(d.dir, name+"-controller.log"),
		SysProcAttr: childSysProcAttr(),
	})
	if err != nil {
		return r, err
	}
	defer p.Kill()
	stop := Every(ctx, 2*time.Second, func() {
		d.progress("      %6d events delivered", len(p.Events()))
	})
	converged := Converged(want)
	steady := false
	seen := 0
	err = p.WaitFor(ctx, func(es []democtl.Event) bool {
		for _, e := range es[seen:] {
			steady = steady || e.Type == "steady"
		}
		seen = len(es)
		return converged(es) && steady
	})
	stop()
	if err != nil {
		return r, fmt.Errorf("%w: the %s run did not catch up with the server: %w (log: %s)", ErrController, name, err, filepath.Join(d.dir, name+"-controller.log"))
	}
	if err := p.Stop(); err != nil {
		return r, err
	}
	r.Wall = time.Since(begin)
	r.AtSync = differAtSync(p.Events(), want)
	if r.Stats, err = democtl.ReadStats(stats); err != nil {
		return r, err
	}
	lists, streams, err := d.podRequests(ctx)
	if err != nil {
		return r, err
	}
	r.Lists, r.WatchLists = lists-lists0, streams-streams0
	d.progress("      %s start: synced in %s, %d events, %v LIST requests and %v WatchList streams at the apiserver",
		name, seconds(r.Stats.SyncedSeconds), r.Stats.Events.Total(), r.Lists, r.WatchLists)
	return r, nil
}

// differAtSync counts the pods where what the handler had been told when
// the controller logged "synced" (the events before that line, folded)
// differs from want: missing, extra, or at another resourceVersion.
func differAtSync(es []democtl.Event, want map[string]string) int {
	for i, e := range es {
		if e.Type != "synced" {
			continue
		}
		view := Fold(nil, es[:i])
		n := 0
		for k, rv := range want {
			if got, ok := view[k]; !ok || got != rv {
				n++
			}
		}
		for k := range view {
			if _, ok := want[k]; !ok {
				n++
			}
		}
		return n
	}
	return len(want)
}

// change updates half of n random pods, deletes a quarter and creates as
// many new ones.
func (d *demo) change(ctx context.Context, n int) error {
	current, err := d.listPods(ctx)
	if err != nil {
		return err
	}
	keys := make([]string, 0, len(current))
	for k := range current {
		keys = append(keys, k)
	}
	rand.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
	updates, deletes := n/2, n/4
	creates := n - updates - deletes
	if updates+deletes > len(keys) {
		return fmt.Errorf("%w: %d changes of %d pods", ErrInvalidOptions, n, len(keys))
	}
	var (
		mu    sync.Mutex
		first error
		wg    sync.WaitGroup
		jobs  = make(chan func() error)
	)
	for range d.o.Workers {
		wg.Go(func() {
			for job := range jobs {
				if err := job(); err != nil {
					mu.Lock()
					first = firstErr(first, err)
					mu.Unlock()
				}
			}
		})
	}
	pods := func(key string) (string, string) { ns, name, _ := strings.Cut(key, "/"); return ns, name }
	for _, k := range keys[:updates] {
		jobs <- func() error {
			ns, name := pods(k)
			patch := []byte(`{"metadata":{"labels":{"warmcache-demo":"changed"}}}`)
			_, err := d.cs.CoreV1().Pods(ns).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
			return err
		}
	}
	for _, k := range keys[updates : updates+deletes] {
		jobs <- func() error {
			ns, name := pods(k)
			return d.cs.CoreV1().Pods(ns).Delete(ctx, name, *metav1.NewDeleteOptions(0))
		}
	}
	close(jobs)
	wg.Wait()
	if first != nil {
		return fmt.Errorf("%w: change pods: %w", ErrAPI, first)
	}
	return CreatePods(ctx, d.cs, creates, PodOptions{First: d.o.Pods, Workers: d.o.Workers})
}

func firstErr(first, err error) error {
	if first != nil {
		return first
	}
	return err
}

// snapshotInfo runs the snapshot CLI's info command on the cache file,
// or says why it cannot.
func (d *demo) snapshotInfo(ctx context.Context) {
	mod, err := d.moduleDir(ctx)
	if err == nil {
		cmd := exec.CommandContext(ctx, "go", "run", "./cmd/snapshot", "info", d.cache)
		cmd.Dir = mod
		cmd.Stdout = d.o.Out
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err = cmd.Run(); err != nil {
			err = fmt.Errorf("%w: %s", err, strings.TrimSpace(stderr.String()))
		}
	}
	if err != nil {
		fmt.Fprintf(d.o.Out, "(the snapshot CLI could not run: %v)\n", err)
	}
}
