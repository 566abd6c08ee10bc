package democtl

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/warmcache/warmcache/factory"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"github.com/warmcache/warmcache/informer"
	"github.com/warmcache/warmcache/informer/metrics"
	"github.com/warmcache/warmcache/internal/eventlog"
)

// protobuf is the content type Run asks for unless the REST config names
// one, as Kubernetes' own controllers do.
const protobuf = runtime.ContentTypeProtobuf

// Run runs the controller until ctx is done, then shuts it down (workers,
// informer, cache file) and returns what it measured. It returns an error
// wrapping ErrInvalidConfig for a bad config, ErrSync if ctx ended before
// the informer synced, and the factory's error if the cache file cannot be
// opened (a corrupt or foreign file is not an error: the factory moves it
// aside and starts cold). The stats file, when configured, is written in
// every case.
func Run(ctx context.Context, cfg Config) (Stats, error) {
	start := time.Now()
	var st Stats
	cfg, err := cfg.withDefaults()
	if err != nil {
		return st, err
	}
	sampling, stopSampling := context.WithCancel(context.Background())
	var heap heapSampler
	heap.start(sampling, cfg.HeapSampleInterval)
	err = run(ctx, cfg, start, &st)
	stopSampling()
	heap.stop()
	st.PeakHeapBytes = heap.peak.Load()
	st.RunSeconds = time.Since(start).Seconds()
	if err != nil {
		st.Error = err.Error()
	}
	if cfg.StatsFile != "" {
		if werr := writeStats(cfg.StatsFile, st); werr != nil {
			err = errors.Join(err, werr)
		}
	}
	return st, err
}

func run(ctx context.Context, cfg Config, start time.Time, st *Stats) (err error) {
	logger := klog.FromContext(ctx)
	var received atomic.Int64
	rc := rest.CopyConfig(cfg.RESTConfig)
	if rc.ContentType == "" {
		rc.ContentType = protobuf
		rc.AcceptContentTypes = protobuf + "," + runtime.ContentTypeJSON
	}
	rc.Wrap(func(rt http.RoundTripper) http.RoundTripper { return countingTransport{next: rt, n: &received} })
	defer func() { st.BytesReceived = received.Load() }()

	reg := prometheus.NewRegistry()
	set, err := metrics.New(reg, metrics.Options{})
	if err != nil {
		return err
	}
	defer func() {
		if merr := readInformerMetrics(reg, st); merr != nil {
			err = errors.Join(err, merr)
		}
	}()

	// Counted after the informers are shut down: nothing is delivered
	// after that.
	c := &controller{
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "pods"}),
		logger: logger,
	}
	var counts counters
	events := eventlog.New[Event](logger, cfg.EventLog)
	defer func() { st.Events = counts.snapshot(); st.Reconciles = c.reconciles.Load() }()

	f, err := factory.New(ctx, factory.Options{Path: cfg.CacheFile, RESTConfig: rc, MetricsFor: set.For})
	if err != nil {
		return err
	}
	var inf *informer.Informer
	defer func() {
		if inf != nil {
			if s, serr := inf.Store().State(); serr == nil {
				st.Objects = s.Objects
			}
		}
		if serr := f.Shutdown(); serr != nil {
			err = errors.Join(err, fmt.Errorf("democtl: shut down the informers: %w", serr))
		}
	}()
	pods := corev1.SchemeGroupVersion.WithResource("pods")
	scope := factory.Scope{Namespace: cfg.Namespace}
	lw, err := factory.TypedListWatch(rc, nil, pods, scope)
	if err != nil {
		return err
	}
	inf, err = f.InformerFor(ctx, pods, &corev1.Pod{}, lw, scope, Indexers())
	if err != nil {
		return err
	}
	if s, serr := inf.Store().State(); serr == nil {
		st.WarmStart = s.Complete
	}

	c.lister = corelisters.NewPodLister(inf.GetIndexer())
	c.indexer = inf.GetIndexer()
	registration, err := inf.AddEventHandler(&handler{queue: c.queue, log: events, counts: &counts, logger: logger})
	if err != nil {
		return err
	}

	f.Start(ctx)
	var workers sync.WaitGroup
	defer func() {
		c.queue.ShutDown()
		workers.Wait()
	}()
	if !cache.WaitFor(ctx, "", registration.HasSyncedChecker()) {
		return fmt.Errorf("%w: %w", ErrSync, context.Cause(ctx))
	}
	st.SyncedSeconds = time.Since(start).Seconds()
	logger.Info("Synced", "warmStart", st.WarmStart, "took", time.Since(start).Round(time.Millisecond))
	events.Write(Event{Type: "synced", WarmStart: st.WarmStart, SyncedSeconds: st.SyncedSeconds})

	for range cfg.Workers {
		workers.Go(func() {
			for c.processNext(ctx) {
			}
		})
	}
	// The steady heap: once the initial burst of keys is processed.
	drained := wait.PollUntilContextCancel(ctx, 10*time.Millisecond, true, func(context.Context) (bool, error) {
		return c.queue.Len() == 0, nil
	})
	if drained == nil {
		st.SteadyHeapBytes = steadyHeap()
		logger.V(1).Info("Queue drained", "reconciles", c.reconciles.Load(), "steadyHeapBytes", st.SteadyHeapBytes)
		events.Write(Event{Type: "steady", SteadyHeapBytes: st.SteadyHeapBytes})
	}
	<-ctx.Done()
	return nil
}

// readInformerMetrics copies the informer's request counters into st.
func readInformerMetrics(g prometheus.Gatherer, st *Stats) error {
	var errs []error
	read := func(dst *int64, name, label, value string) {
		v, err := counterSum(g, name, label, value)
		errs = append(errs, err)
		*dst = v
	}
	read(&st.ListRequests, "warmcache_informer_lists_total", "", "")
	read(&st.WatchRequests, "warmcache_informer_watches_total", "watchlist", "false")
	read(&st.WatchListRequests, "warmcache_informer_watches_total", "watchlist", "true")
	read(&st.Relists, "warmcache_informer_relists_total", "", "")
	read(&st.Resumes, "warmcache_informer_resumes_total", "", "")
	return errors.Join(errs...)
}

// controller is the worker side: keys in, objects read from the lister.
type controller struct {
	queue      workqueue.TypedRateLimitingInterface[string]
	lister     corelisters.PodLister
	indexer    cache.Indexer
	logger     klog.Logger
	reconciles atomic.Int64
}

// processNext handles one key; it returns false once the queue is shut
// down.
func (c *controller) processNext(ctx context.Context) bool {
	key, quit := c.queue.Get()
	if quit {
		return false
	}
	defer c.queue.Done(key)
	if err := c.reconcile(ctx, key); err != nil {
		c.logger.Error(err, "Reconcile failed; retrying", "key", key)
		c.queue.AddRateLimited(key)
		return true
	}
	c.queue.Forget(key)
	return true
}

// NodeNameIndex is the name of the index of pods by spec.nodeName.
const NodeNameIndex = "nodeName"

// Indexers returns the indexes of the controller's pod informer: by
// namespace and by node name. Their entries live in the cache file.
func Indexers() cache.Indexers {
	return cache.Indexers{
		cache.NamespaceIndex: cache.MetaNamespaceIndexFunc,
		NodeNameIndex: func(obj interface{}) ([]string, error) {
			pod, ok := obj.(*corev1.Pod)
			if !ok || pod.Spec.NodeName == "" {
				return nil, nil
			}
			return []string{pod.Spec.NodeName}, nil
		},
	}
}

// reconcile reads the pod of key from the cache and counts the pods on
// its node through the index (keys only, nothing decoded). A real
// controller would compare the pod's spec with the world here.
func (c *controller) reconcile(_ context.Context, key string) error {
	c.reconciles.Add(1)
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil // not retryable
	}
	pod, err := c.lister.Pods(ns).Get(name)
	switch {
	case apierrors.IsNotFound(err):
		c.logger.V(4).Info("Pod is gone", "key", key)
		return nil
	case err != nil:
		return err
	}
	var onNode int
	if pod.Spec.NodeName != "" {
		keys, err := c.indexer.IndexKeys(NodeNameIndex, pod.Spec.NodeName)
		if err != nil {
			return err
		}
		onNode = len(keys)
	}
	c.logger.V(5).Info("Pod seen", "key", key, "phase", pod.Status.Phase, "resourceVersion", pod.ResourceVersion, "podsOnNode", onNode)
	return nil
}
