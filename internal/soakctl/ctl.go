// Package soakctl is the controller the soak (package soak) runs as a child
// process and kills: three informers of one factory on one cache file —
// pods and configmaps typed, the soak's custom resource (WidgetGVR)
// unstructured — each with a handler that logs every event it is told as
// a JSON line (Event) on the event log. When a handler has synced it logs
// a synced line; every RuntimeInterval it logs a runtime line
// (goroutines, heap, the informers' relist and 410 counters).
//
// It is democtl's kind, without a workqueue: what the soak checks is what
// the handlers are told, and the file.
package soakctl

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"runtime"
	"runtime/metrics"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"github.com/warmcache/warmcache/factory"
	"github.com/warmcache/warmcache/informer"
	informermetrics "github.com/warmcache/warmcache/informer/metrics"
	"github.com/warmcache/warmcache/internal/eventlog"
)

// Exit codes of Main.
const (
	ExitOK    = 0 // ran until its context ended, then shut down cleanly
	ExitError = 1 // Run failed
	ExitUsage = 2 // bad flags or kubeconfig
)

// ErrInvalidConfig reports a Config Run cannot use.
var ErrInvalidConfig = errors.New("soakctl: invalid config")

// DefaultRuntimeInterval is the default Config.RuntimeInterval.
const DefaultRuntimeInterval = time.Second

// Config configures Run.
type Config struct {
	// RESTConfig reaches the apiserver (required). Its content type
	// defaults to protobuf, as Kubernetes' own controllers ask.
	RESTConfig *rest.Config
	// CacheFile is the factory's bbolt file (required).
	CacheFile string
	// EventLog receives the event lines (required).
	EventLog io.Writer
	// RuntimeInterval is the period of the runtime lines. Default
	// DefaultRuntimeInterval.
	RuntimeInterval time.Duration
}

// Main parses args (without the program name), runs the controller until
// ctx is done and returns the exit code. The event log goes to stdout,
// diagnostics to stderr.
//
// Flags: --kubeconfig FILE (required), --cache-file FILE (required),
// --runtime-interval DURATION, and klog's (-v ...).
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("soak-controller", flag.ContinueOnError)
	fs.SetOutput(stderr)
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig file (required)")
	var cfg Config
	fs.StringVar(&cfg.CacheFile, "cache-file", "", "bbolt cache file (required)")
	fs.DurationVar(&cfg.RuntimeInterval, "runtime-interval", DefaultRuntimeInterval, "period of the runtime lines")
	klog.InitFlags(fs)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return ExitOK
		}
		return ExitUsage
	}
	if fs.NArg() > 0 || *kubeconfig == "" {
		fmt.Fprintf(stderr, "soak-controller: want --kubeconfig and --cache-file, no arguments (got %q)\n", fs.Args())
		return ExitUsage
	}
	logger := klog.NewKlogr()
	ctx = klog.NewContext(ctx, logger)
	defer klog.Flush()
	rc, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		fmt.Fprintf(stderr, "soak-controller: load kubeconfig: %v\n", err)
		return ExitUsage
	}
	cfg.RESTConfig = rc
	cfg.EventLog = stdout
	if err := Run(ctx, cfg); err != nil {
		logger.Error(err, "Controller failed")
		if errors.Is(err, ErrInvalidConfig) {
			return ExitUsage
		}
		return ExitError
	}
	return ExitOK
}

// Run runs the controller until ctx is done, then shuts the factory down
// (informers, then the file).
func Run(ctx context.Context, cfg Config) (err error) {
	switch {
	case cfg.RESTConfig == nil, cfg.CacheFile == "", cfg.EventLog == nil:
		return fmt.Errorf("%w: RESTConfig, CacheFile and EventLog are required", ErrInvalidConfig)
	case cfg.RuntimeInterval < 0:
		return fmt.Errorf("%w: RuntimeInterval %v is negative", ErrInvalidConfig, cfg.RuntimeInterval)
	case cfg.RuntimeInterval == 0:
		cfg.RuntimeInterval = DefaultRuntimeInterval
	}
	logger := klog.FromContext(ctx)
	rc := rest.CopyConfig(cfg.RESTConfig)
	if rc.ContentType == "" {
		rc.ContentType = kruntime.ContentTypeProtobuf
		rc.AcceptContentTypes = kruntime.ContentTypeProtobuf + "," + kruntime.ContentTypeJSON
	}
	rc.WarningHandler = rest.NoWarnings{}
	reg := prometheus.NewRegistry()
	set, err := informermetrics.New(reg, informermetrics.Options{})
	if err != nil {
		return fmt.Errorf("soakctl: metrics: %w", err)
	}
	log := eventlog.New[Event](logger, cfg.EventLog)

	f, err := factory.New(ctx, factory.Options{Path: cfg.CacheFile, RESTConfig: rc, MetricsFor: set.For})
	if err != nil {
		return fmt.Errorf("soakctl: open the cache file %s: %w", cfg.CacheFile, err)
	}
	defer func() {
		if serr := f.Shutdown(); serr != nil {
			err = errors.Join(err, fmt.Errorf("soakctl: shut down: %w", serr))
		}
	}()
	type registered struct {
		resource string
		warm     bool
		reg      cache.ResourceEventHandlerRegistration
	}
	var regs []registered
	for _, r := range Resources {
		var inf *informer.Informer
		if r.Dynamic() {
			inf, err = f.ForDynamic(ctx, r.GVR, factory.Scope{})
		} else {
			inf, err = f.ForResource(ctx, r.GVR, r.Kind, factory.Scope{})
		}
		if err != nil {
			return fmt.Errorf("soakctl: informer of %s: %w", r.Name, err)
		}
		st, err := inf.Store().State()
		if err != nil {
			return fmt.Errorf("soakctl: state of %s: %w", r.Name, err)
		}
		warm := st.Complete
		reg, err := inf.AddEventHandler(handler{resource: r.Name, log: log})
		if err != nil {
			return fmt.Errorf("soakctl: handler of %s: %w", r.Name, err)
		}
		regs = append(regs, registered{resource: r.Name, warm: warm, reg: reg})
	}
	f.Start(ctx)
	var wg sync.WaitGroup
	defer wg.Wait()
	for _, r := range regs {
		wg.Go(func() {
			if cache.WaitFor(ctx, "", r.reg.HasSyncedChecker()) {
				logger.Info("Handler synced", "resource", r.resource)
				log.Write(Event{Type: TypeSynced, Resource: r.resource, Warm: r.warm})
			}
		})
	}
	wg.Go(func() {
		wait.UntilWithContext(ctx, func(context.Context) {
			log.Write(Event{Type: TypeRuntime, Runtime: sample(reg)})
		}, cfg.RuntimeInterval)
	})
	<-ctx.Done()
	return nil
}

// sample reads the process's runtime and the informers' counters.
func sample(g prometheus.Gatherer) *Runtime {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	rt := &Runtime{Goroutines: runtime.NumGoroutine()}
	if s[0].Value.Kind() == metrics.KindUint64 {
		rt.HeapBytes = s[0].Value.Uint64()
	}
	mfs, err := g.Gather()
	if err != nil {
		return rt
	}
	sums := map[string]*int64{
		"warmcache_informer_lists_total":          &rt.Lists,
		"warmcache_informer_relists_total":        &rt.Relists,
		"warmcache_informer_expired_total":        &rt.Expired,
		"warmcache_informer_resumes_total":        &rt.Resumes,
		"warmcache_informer_apply_failures_total": &rt.ApplyFailures,
	}
	for _, mf := range mfs {
		dst, ok := sums[mf.GetName()]
		if !ok {
			continue
		}
		var sum float64
		for _, m := range mf.GetMetric() {
			sum += m.GetCounter().GetValue()
		}
		*dst = int64(sum)
	}
	return rt
}
