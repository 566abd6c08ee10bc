// Command resumebench measures warm starts against a real kube-apiserver
// and etcd (the binaries of internal/kubebin, built on first use): how
// long an informer takes from its start to HasSynced when it resumes from
// its cache file, beside client-go's informer listing the same pods.
//
// Usage:
//
//	go run ./benchmarks/cmd/resumebench [-pods 2000] [-configmaps 40] [-runs 20] [-change 0.01] [-version-check-limit 0] [-no-watch-cache]
//
// It starts kube-apiserver and etcd on loopback, creates -pods pods and
// -configmaps ConfigMaps in one namespace, and syncs a warmcache factory
// with a pods informer and a ConfigMaps informer on a new file once. Then,
// -runs times, it restarts the factory on the file in three situations and
// records each informer's time to synced:
//
//   - idle: nothing of either resource changed, but the cluster's
//     resourceVersion moved on (a write elsewhere, as leases do every
//     10s). The pods (more than a page) sync once the resume check's
//     version check (the metadata of every pod) found them unchanged, or,
//     over -version-check-limit, on the watch cache's bookmark; the
//     ConfigMaps (a page or less: checked whole by the resume check) at
//     once.
//   - changed: -change of the pods were updated while the factory was
//     stopped; the pods sync once the resumed watch has delivered them.
//   - client-go: client-go's SharedIndexInformer lists the pods (the cold
//     sync every client-go controller pays at each restart).
//
// With -no-watch-cache the apiserver runs with --watch-cache=false: it
// sends no bookmarks, so without the version check (-version-check-limit
// -1, or more pods than the limit) the idle pods' catch-up watches stay
// silent for their 3s timeout and the warm start then relists them (the
// exact fallback); this measures what that costs.
//
// It reports the distribution (min, p50, p90, max) of each. The table goes
// to stdout, progress to stderr. Exit status: 0 on success, 1 if a
// measurement failed, 2 for bad flags.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/warmcache/warmcache/benchmarks/internal/cmdrun"
	"github.com/warmcache/warmcache/benchmarks/internal/machine"
	"github.com/warmcache/warmcache/factory"
	"github.com/warmcache/warmcache/informer"
	wcinformers "github.com/warmcache/warmcache/informers"
	"github.com/warmcache/warmcache/internal/demo"
	"github.com/warmcache/warmcache/internal/testenv"
	"github.com/warmcache/warmcache/reflector"
	"github.com/warmcache/warmcache/store/bolt"
)

const namespace = "resumebench"

type options struct {
	pods, configMaps, runs int
	change                 float64
	dir                    string
	noWatchCache           bool
	versionCheckLimit      int
}

func parse(args []string, stderr io.Writer) (options, error) {
	fs := cmdrun.FlagSet("resumebench", stderr)
	var o options
	fs.IntVar(&o.pods, "pods", 2000, "pods in the namespace (more than a page of 500 for the watch's catch-up)")
	fs.IntVar(&o.configMaps, "configmaps", 40, "ConfigMaps in the namespace (at most 500 for the resume check's whole-resource check)")
	fs.IntVar(&o.runs, "runs", 20, "warm starts measured in each situation")
	fs.Float64Var(&o.change, "change", 0.01, "fraction of the pods updated before each changed warm start")
	fs.StringVar(&o.dir, "dir", "", "working directory (default: a temporary one, removed at the end)")
	fs.BoolVar(&o.noWatchCache, "no-watch-cache", false, "run kube-apiserver with --watch-cache=false (no bookmarks: a warm start of a resource over a page and over the version check's limit relists)")
	fs.IntVar(&o.versionCheckLimit, "version-check-limit", 0, "the reflectors' VersionCheckLimit: the most stored objects whose versions a warm start compares with the server's (0: the default, 5,000; -1: never, the catch-up waits for the bookmark)")
	if err := cmdrun.Parse(fs, args); err != nil {
		return o, err
	}
	switch {
	case o.pods < 1, o.configMaps < 1, o.runs < 1:
		return o, fmt.Errorf("%w: -pods, -configmaps and -runs must be positive", cmdrun.ErrUsage)
	case o.change <= 0 || o.change > 1:
		return o, fmt.Errorf("%w: -change must be in (0, 1]", cmdrun.ErrUsage)
	}
	return o, nil
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	return cmdrun.Run("resumebench", args, stderr, parse, func(ctx context.Context, o options) error {
		return measure(ctx, o, args, stdout, stderr)
	})
}

// bench is one measurement's cluster and file.
type bench struct {
	o      options
	env    *testenv.Env
	config *rest.Config
	cs     kubernetes.Interface
	file   string
	stderr io.Writer
}

func measure(ctx context.Context, o options, args []string, stdout, stderr io.Writer) (err error) {
	if o.dir == "" {
		dir, err := os.MkdirTemp("", "resumebench-")
		if err != nil {
			return err
		}
		defer func() { err = errors.Join(err, os.RemoveAll(dir)) }()
		o.dir = dir
	}
	fmt.Fprintln(stderr, "starting kube-apiserver and etcd (the first run builds them: minutes)")
	var apiserverArgs []string
	if o.noWatchCache {
		apiserverArgs = append(apiserverArgs, "--watch-cache=false")
	}
	env, err := testenv.Start(ctx, nil, testenv.Options{Dir: o.dir, ExtraAPIServerArgs: apiserverArgs})
	if err != nil {
		return err
	}
	defer env.Stop()
	b := &bench{o: o, env: env, config: env.RestConfig(), file: filepath.Join(o.dir, "cache.db"), stderr: stderr}
	b.config.ContentType = "application/vnd.kubernetes.protobuf"
	b.config.WarningHandler = rest.NoWarnings{}
	if b.cs, err = kubernetes.NewForConfig(b.config); err != nil {
		return err
	}
	if err := b.populate(ctx); err != nil {
		return err
	}
	if _, err := b.warmcache(ctx); err != nil { // the cold sync that fills the file
		return err
	}
	before := machine.Read()
	var idlePods, idleCMs, changedPods, clientGo []time.Duration
	for i := range o.runs {
		if err := b.moveResourceVersion(ctx, i); err != nil {
			return err
		}
		d, err := b.warmcache(ctx)
		if err != nil {
			return err
		}
		idlePods, idleCMs = append(idlePods, d["pods"]), append(idleCMs, d["configmaps"])
		if err := b.changePods(ctx, i); err != nil {
			return err
		}
		if d, err = b.warmcache(ctx); err != nil {
			return err
		}
		changedPods = append(changedPods, d["pods"])
		cg, err := b.clientGo(ctx)
		if err != nil {
			return err
		}
		clientGo = append(clientGo, cg)
		fmt.Fprintf(stderr, "run %d: idle pods %v, idle configmaps %v, changed pods %v, client-go %v\n", i+1,
			idlePods[i].Round(time.Millisecond), idleCMs[i].Round(time.Millisecond), changedPods[i].Round(time.Millisecond), cg.Round(time.Millisecond))
	}
	cacheNote := "with its watch cache"
	if o.noWatchCache {
		cacheNote = "without its watch cache"
	}
	fmt.Fprintf(stdout, "resumebench %v\nkube-apiserver %s; %d pods, %d ConfigMaps, %d runs; time from the start to HasSynced\n", args, cacheNote, o.pods, o.configMaps, o.runs)
	fmt.Fprintf(stdout, "%-58s %9s %9s %9s %9s\n", "", "min", "p50", "p90", "max")
	row := func(name string, ds []time.Duration) {
		s := append([]time.Duration(nil), ds...)
		sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
		q := func(p float64) string {
			return s[min(len(s)-1, int(p*float64(len(s))))].Round(time.Millisecond).String()
		}
		fmt.Fprintf(stdout, "%-58s %9s %9s %9s %9s\n", name, s[0].Round(time.Millisecond), q(0.5), q(0.9), s[len(s)-1].Round(time.Millisecond))
	}
	row(fmt.Sprintf("warm, idle ConfigMaps (%d: checked whole)", o.configMaps), idleCMs)
	limit := o.versionCheckLimit
	if limit == 0 {
		limit = reflector.DefaultVersionCheckLimit
	}
	idleHow := "the watch cache's bookmark"
	switch {
	case o.pods <= limit:
		idleHow = "the version check"
	case o.noWatchCache:
		idleHow = "no bookmark: a relist"
	}
	row(fmt.Sprintf("warm, idle pods (%d: %s)", o.pods, idleHow), idlePods)
	row(fmt.Sprintf("warm, pods with %d changed while down", int(o.change*float64(o.pods))), changedPods)
	row("client-go, pods (LIST)", clientGo)
	if l := machine.RunLabel(before, machine.Read()); l != "" {
		fmt.Fprintln(stdout, l)
	}
	return nil
}

// populate creates the namespace, the pods and the ConfigMaps.
func (b *bench) populate(ctx context.Context) error {
	fmt.Fprintf(b.stderr, "creating %d pods and %d ConfigMaps\n", b.o.pods, b.o.configMaps)
	if err := demo.EnsureNamespaces(ctx, b.cs, namespace); err != nil {
		return err
	}
	if err := demo.CreatePods(ctx, b.cs, b.o.pods, demo.PodOptions{Namespace: namespace, Workers: 8}); err != nil {
		return err
	}
	for i := range b.o.configMaps {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%04d", i)}, Data: map[string]string{"i": fmt.Sprint(i)}}
		if _, err := b.cs.CoreV1().ConfigMaps(namespace).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create ConfigMap: %w", err)
		}
	}
	return nil
}

// moveResourceVersion writes outside the namespace, so that the cluster's
// resourceVersion moves on while neither resource of the namespace
// changes.
func (b *bench) moveResourceVersion(ctx context.Context, i int) error {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("elsewhere-%d", i)}}
	_, err := b.cs.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{})
	return err
}

// changePods updates -change of the pods (a label).
func (b *bench) changePods(ctx context.Context, gen int) error {
	n := max(1, int(b.o.change*float64(b.o.pods)))
	l, err := b.cs.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{Limit: int64(n)})
	if err != nil {
		return err
	}
	patch := []byte(fmt.Sprintf(`{"metadata":{"labels":{"resumebench":"%d"}}}`, gen))
	for _, p := range l.Items {
		if _, err := b.cs.CoreV1().Pods(namespace).Patch(ctx, p.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			return fmt.Errorf("update pod %s: %w", p.Name, err)
		}
	}
	return nil
}

// warmcache starts a factory on the file with a pods and a ConfigMaps
// informer, each with a handler, and returns each one's time from the
// start to HasSynced; then it shuts the factory down.
func (b *bench) warmcache(ctx context.Context) (map[string]time.Duration, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	start := time.Now()
	wf, err := factory.New(ctx, factory.Options{Path: b.file, RESTConfig: b.config, Bolt: bolt.Options{Sync: bolt.UnsafeNoSync},
		Informer: informer.Options{Reflector: reflector.Options{VersionCheckLimit: b.o.versionCheckLimit}}})
	if err != nil {
		return nil, err
	}
	f := wcinformers.NewSharedInformerFactoryWithContext(ctx, wf, b.cs, 0, wcinformers.WithNamespace(namespace))
	defer f.Shutdown()
	infs := map[string]cache.SharedIndexInformer{
		"pods":       f.Core().V1().Pods().Informer(),
		"configmaps": f.Core().V1().ConfigMaps().Informer(),
	}
	for _, inf := range infs {
		if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{}); err != nil {
			return nil, err
		}
	}
	f.StartWithContext(ctx)
	out := map[string]time.Duration{}
	done := make(chan string, len(infs))
	for name, inf := range infs {
		go func() {
			if cache.WaitFor(ctx, "", inf.HasSyncedChecker()) {
				done <- name
			} else {
				done <- ""
			}
		}()
	}
	var failed []string
	for range infs {
		name := <-done
		if name == "" {
			failed = append(failed, "an informer")
			continue
		}
		out[name] = time.Since(start)
	}
	if len(failed) > 0 {
		return nil, fmt.Errorf("resumebench: %s did not sync: %w", strings.Join(failed, ", "), ctx.Err())
	}
	return out, nil
}

// clientGo runs client-go's pods informer of the namespace until it has
// synced, and returns the time from its start.
func (b *bench) clientGo(ctx context.Context) (time.Duration, error) {
	ctx, cancel := context.WithCancel(ctx)
	start := time.Now()
	f := informers.NewSharedInformerFactoryWithOptions(b.cs, 0, informers.WithNamespace(namespace))
	defer f.Shutdown() // waits for the informers, which stop with ctx: after cancel
	defer cancel()
	inf := f.Core().V1().Pods().Informer()
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{}); err != nil {
		return 0, err
	}
	f.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		return 0, fmt.Errorf("resumebench: client-go's informer did not sync: %w", ctx.Err())
	}
	return time.Since(start), nil
}
