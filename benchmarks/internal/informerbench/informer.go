// Package informerbench measures warmcache's informer side by side with
// client-go's cache.NewSharedIndexInformer, fed by the same source (a
// Server): an internal/fakeapi server or a genserver in a child process
// (benchmarks/internal/apiproc) that serves list and watch over HTTP with
// protobuf, as kube-apiserver does, so that every informer pays for
// decoding, or a real kube-apiserver and etcd
// (benchmarks/internal/kubeserver).
//
// Measured per implementation: cold sync time and peak heap, steady heap
// after the sync, sustained update events per second delivered to a
// handler, and, for the bolt store, warm restart time to HasSynced with
// and without a handler to replay the stored objects to.
package informerbench

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/warmcache/warmcache/benchmarks/internal/storebench"
	"github.com/warmcache/warmcache/factory"
	"github.com/warmcache/warmcache/informer"
	"github.com/warmcache/warmcache/store"
	"github.com/warmcache/warmcache/store/bolt"
	"github.com/warmcache/warmcache/store/codec"
	"github.com/warmcache/warmcache/store/memory"
)

// The implementations measured, by name: the stores storebench measures,
// each under an informer. ClientGo is the baseline.
const (
	ClientGo = storebench.ClientGo
	Memory   = storebench.Memory
	Bolt     = storebench.Bolt
)

// Impls lists the implementations in the order they run and print; the
// first is the baseline.
var Impls = []string{ClientGo, Memory, Bolt}

// Errors of this package.
var (
	// ErrUnknownImpl is returned for a name not in Impls.
	ErrUnknownImpl = errors.New("informerbench: unknown implementation")
	// ErrInvalidArgument is returned for missing or non-positive
	// arguments.
	ErrInvalidArgument = errors.New("informerbench: invalid argument")
)

// ProtobufContentType is the default content type of the clients.
const ProtobufContentType = "application/vnd.kubernetes.protobuf"

// Options configures the informers under test.
type Options struct {
	// Dir holds the bolt store's file. Required for Bolt.
	Dir string
	// BoltSync is the bolt store's durability policy. Default (zero):
	// bolt.SyncOnClose, the store's default.
	BoltSync bolt.SyncPolicy
	// BoltPageSize is the page size of the bolt store's file
	// (bolt.Options.PageSize). Default (0): the store's default.
	BoltPageSize int
	// BoltReplayHeadroom is the room the bolt store lends the collector
	// during a replay (bolt.Options.ReplayHeadroom). Default (nil): the
	// store's default.
	BoltReplayHeadroom *int64
	// ContentType is the clients' content type. Default
	// ProtobufContentType.
	ContentType string
	// BatchSize and QueueCapacity are warmcache's informer's
	// (informer.Options), for the memory and bolt informers. Default (0):
	// the informer's defaults.
	BatchSize, QueueCapacity int
}

func (o Options) withDefaults(impl string) (Options, error) {
	if impl == Bolt && o.Dir == "" {
		return o, fmt.Errorf("%w: %s needs a directory", ErrInvalidArgument, impl)
	}
	if o.ContentType == "" {
		o.ContentType = ProtobufContentType
	}
	return o, nil
}

// boltFile is the name of the bolt store's file in Options.Dir.
const boltFile = "informerbench.db"

// BoltPath returns the path of the bolt store's file.
func (o Options) BoltPath() string { return filepath.Join(o.Dir, boltFile) }

// Indexers are the indexes of every informer: the namespace index.
func Indexers() cache.Indexers {
	return cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}
}

// Informer is one running informer under test. Its methods are not safe for
// concurrent use.
type Informer struct {
	Name string
	// Inf is the informer.
	Inf cache.SharedIndexInformer
	// Counter counts the notifications of its handler; nil without one.
	Counter *Counter
	store   store.Store // nil for client-go
	db      *bolt.DB
	cancel  context.CancelFunc
	done    chan struct{}
}

// Start builds an informer of impl on pods through a clientset of cfg
// (client-go's) or factory.TypedListWatch (warmcache's),
// with a Counter as handler when withHandler, and runs it until Stop. For
// Bolt it opens the file at opts.BoltPath(), creating it if needed: an
// existing complete file is a warm start.
func Start(ctx context.Context, impl string, cfg *rest.Config, opts Options, withHandler bool) (*Informer, error) {
	opts, err := opts.withDefaults(impl)
	if err != nil {
		return nil, err
	}
	c := rest.CopyConfig(cfg)
	c.ContentType = opts.ContentType
	cs, err := kubernetes.NewForConfig(c)
	if err != nil {
		return nil, fmt.Errorf("informerbench: clientset: %w", err)
	}
	lw := cache.NewListWatchFromClient(cs.CoreV1().RESTClient(), "pods", metav1.NamespaceAll, fields.Everything())
	i := &Informer{Name: impl, done: make(chan struct{})}
	switch impl {
	case ClientGo:
		i.Inf = cache.NewSharedIndexInformer(lw, &corev1.Pod{}, 0, Indexers())
	case Memory:
		st, err := memory.New(memory.Options{Indexers: Indexers()})
		if err != nil {
			return nil, fmt.Errorf("informerbench: %s store: %w", impl, err)
		}
		i.store = st
	case Bolt:
		db, err := bolt.Open(ctx, opts.BoltPath(), bolt.Options{Sync: opts.BoltSync, PageSize: opts.BoltPageSize, ReplayHeadroom: opts.BoltReplayHeadroom})
		if err != nil {
			return nil, fmt.Errorf("informerbench: %s store: %w", impl, err)
		}
		st, err := db.Resource(ctx, bolt.ResourceOptions{
			Identity: bolt.Identity{Version: "v1", Resource: "pods", Kind: "Pod"},
			Codec:    codec.Protobuf(nil),
			Indexers: Indexers(),
		})
		if err != nil {
			return nil, fmt.Errorf("informerbench: %s store: %w", impl, errors.Join(err, db.Close()))
		}
		i.db, i.store = db, st
	default:
		return nil, fmt.Errorf("%w: %q (want one of %v)", ErrUnknownImpl, impl, Impls)
	}
	if i.store != nil {
		// warmcache's informers list and watch through the factory's
		// clients, as a controller's do.
		wlw, err := factory.TypedListWatch(c, nil, corev1.SchemeGroupVersion.WithResource("pods"), factory.Scope{})
		if err != nil {
			return nil, fmt.Errorf("informerbench: %s list-watch: %w", impl, errors.Join(err, i.closeStore()))
		}
		inf, err := informer.New(wlw, &corev1.Pod{}, informer.Options{Store: i.store, BatchSize: opts.BatchSize, QueueCapacity: opts.QueueCapacity})
		if err != nil {
			return nil, fmt.Errorf("informerbench: %s informer: %w", impl, errors.Join(err, i.closeStore()))
		}
		i.Inf = inf
	}
	if withHandler {
		i.Counter = &Counter{}
		if _, err := i.Inf.AddEventHandler(i.Counter); err != nil {
			return nil, fmt.Errorf("informerbench: %s handler: %w", impl, errors.Join(err, i.closeStore()))
		}
	}
	runCtx, cancel := context.WithCancel(context.Background())
	i.cancel = cancel
	go func() {
		defer close(i.done)
		i.Inf.RunWithContext(runCtx)
	}()
	return i, nil
}

// WaitSynced waits until the informer has synced and, with a handler, the
// handler has been told of at least adds additions.
func (i *Informer) WaitSynced(ctx context.Context, adds int) error {
	select {
	case <-i.Inf.HasSyncedChecker().Done():
	case <-ctx.Done():
		return fmt.Errorf("informerbench: %s: wait for sync: %w", i.Name, ctx.Err())
	}
	if i.Counter != nil {
		return i.Counter.WaitAdds(ctx, adds)
	}
	return nil
}

// ResourceVersion returns the resourceVersion the informer's store
// recorded (for client-go, the last one its reflector saw).
func (i *Informer) ResourceVersion() string {
	if i.store != nil {
		if st, err := i.store.State(); err == nil {
			return st.ResourceVersion
		}
	}
	return i.Inf.LastSyncResourceVersion()
}

// Stop stops the informer, waits for it and closes its store (a bolt file
// stays, for a warm restart). Stopping twice does nothing.
func (i *Informer) Stop() error {
	if i.cancel == nil {
		return nil
	}
	i.cancel()
	<-i.done
	i.cancel = nil
	return i.closeStore()
}

func (i *Informer) closeStore() error {
	var errs []error
	if i.store != nil {
		errs = append(errs, i.store.Close())
	}
	if i.db != nil {
		errs = append(errs, i.db.Close())
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("informerbench: %s: close store: %w", i.Name, err)
	}
	return nil
}

// RemoveBoltFile removes the bolt store's file of opts, if any.
func RemoveBoltFile(opts Options) error {
	if opts.Dir == "" {
		return nil
	}
	if err := bolt.Remove(opts.BoltPath()); err != nil {
		return fmt.Errorf("informerbench: %w", err)
	}
	return nil
}

// Counter is a cache.ResourceEventHandler that counts notifications and
// lets callers wait for counts. It is safe for concurrent use.
type Counter struct {
	// mu guards every field.
	mu                     sync.Mutex
	adds, updates, deletes int
	waiters                []*waiter
	// marks are closed when an update's new object satisfies their
	// predicate.
	marks []*mark
}

type mark struct {
	match func(obj interface{}) bool
	ch    chan struct{}
}

type waiter struct {
	updates bool // else adds
	target  int
	ch      chan struct{}
}

var _ cache.ResourceEventHandler = (*Counter)(nil)

// OnAdd implements cache.ResourceEventHandler.
func (c *Counter) OnAdd(interface{}, bool) { c.count(false) }

// OnUpdate implements cache.ResourceEventHandler.
func (c *Counter) OnUpdate(_, obj interface{}) {
	c.count(true)
	c.mu.Lock()
	defer c.mu.Unlock()
	kept := c.marks[:0]
	for _, m := range c.marks {
		if m.match(obj) {
			close(m.ch)
			continue
		}
		kept = append(kept, m)
	}
	c.marks = kept
}

// Mark returns a channel closed when the handler is told of an update
// whose new object satisfies match (called with the Counter's lock held).
func (c *Counter) Mark(match func(obj interface{}) bool) <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := &mark{match: match, ch: make(chan struct{})}
	c.marks = append(c.marks, m)
	return m.ch
}

// OnDelete implements cache.ResourceEventHandler.
func (c *Counter) OnDelete(interface{}) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.deletes++
}

func (c *Counter) count(update bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if update {
		c.updates++
	} else {
		c.adds++
	}
	kept := c.waiters[:0]
	for _, w := range c.waiters {
		if w.updates == update && c.countLocked(update) >= w.target {
			close(w.ch)
			continue
		}
		kept = append(kept, w)
	}
	c.waiters = kept
}

func (c *Counter) countLocked(updates bool) int {
	if updates {
		return c.updates
	}
	return c.adds
}

// Counts returns the numbers of additions, updates and deletions seen.
func (c *Counter) Counts() (adds, updates, deletes int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.adds, c.updates, c.deletes
}

// WaitAdds waits until at least n additions were seen.
func (c *Counter) WaitAdds(ctx context.Context, n int) error { return c.wait(ctx, false, n) }

// WaitUpdates waits until at least n updates were seen.
func (c *Counter) WaitUpdates(ctx context.Context, n int) error { return c.wait(ctx, true, n) }

func (c *Counter) wait(ctx context.Context, updates bool, n int) error {
	c.mu.Lock()
	if c.countLocked(updates) >= n {
		c.mu.Unlock()
		return nil
	}
	w := &waiter{updates: updates, target: n, ch: make(chan struct{})}
	c.waiters = append(c.waiters, w)
	c.mu.Unlock()
	select {
	case <-w.ch:
		return nil
	case <-ctx.Done():
		adds, upd, _ := c.Counts()
		return fmt.Errorf("informerbench: waiting for %d (updates: %v), saw %d adds and %d updates: %w", n, updates, adds, upd, ctx.Err())
	}
}
