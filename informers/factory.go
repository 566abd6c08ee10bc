package informers

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	clientinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/informers/internalinterfaces"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/warmcache/warmcache/factory"
	"github.com/warmcache/warmcache/informers/internal/fallback"
)

// A SharedInformerOption configures a Factory, as client-go's options of
// the same names configure its factory.
type SharedInformerOption func(*Factory)

// WithNamespace limits the factory's informers of namespaced resources to
// namespace (recorded in each informer's scope).
func WithNamespace(namespace string) SharedInformerOption {
	return func(f *Factory) { f.namespace = namespace }
}

// WithTweakListOptions sets the function applied to every list and watch
// request. Its selectors are part of each informer's scope; see the
// package documentation for what it may set.
func WithTweakListOptions(tweak internalinterfaces.TweakListOptionsFunc) SharedInformerOption {
	return func(f *Factory) { f.tweak = tweak }
}

// WithTransform sets a transform on every informer; the transformed object
// is what the file stores. When the function changes what it keeps or how
// it rewrites objects, change WithTransformVersion too, or a warm start
// serves objects shaped by the old function.
func WithTransform(transform cache.TransformFunc) SharedInformerOption {
	return func(f *Factory) { f.transform = transform }
}

// WithTransformVersion records version as the version of the factory's
// transform in the file (factory.WithTransformVersion): a warm start that
// finds another version recorded (adding, removing or changing the
// transform included) discards the stored objects, logs why, and relists.
// Default "": no transform, or one that never changes.
func WithTransformVersion(version string) SharedInformerOption {
	return func(f *Factory) { f.transformVersion = version }
}

// WithIndexVersion records version as the version of the index functions
// the informers are created with (those of InformerFor's newFunc), as
// factory.WithIndexVersion: change it whenever one changes meaning under
// the same name, so that a warm start rebuilds their entries instead of
// answering ByIndex from the old ones. Indexes added later with
// AddIndexers are rebuilt at every start and need no version.
func WithIndexVersion(version string) SharedInformerOption {
	return func(f *Factory) { f.indexVersion = version }
}

// WithRESTConfig makes the informers list and watch through REST clients
// built from config (factory.TypedListWatch), instead of through the typed
// clients of the kubernetes.Interface the factory was given. Their watches
// are decoded on every core, where a kubernetes.Interface's decode on one
// goroutine, as client-go's do, and each object decoded from protobuf
// keeps the message it arrived in, which the bolt store writes as it is
// instead of marshalling the object again (README's benchmarks measure
// warmcache's informers on these clients).
//
// config must reach the same cluster as the client, with the same
// identity: pass the config the client was built from (the one given to
// factory.Options.RESTConfig). The informers ask for protobuf (with JSON
// as the fallback, AcceptContentTypes) when config.ContentType is empty,
// as a rest.Config from a kubeconfig is: the protobuf savings need nothing
// more. A content type config sets is used as it is (JSON:
// "application/json", at the cost of those savings). config itself is not
// modified. The tweak of WithTweakListOptions applies to every request as
// before. The client still serves what the informers do not do: fallbacks
// (see the package doc) list and watch through it. Default nil: the
// client's typed clients.
func WithRESTConfig(config *rest.Config) SharedInformerOption {
	return func(f *Factory) { f.config = preferProtobuf(config) }
}

// preferProtobuf returns config, or a copy asking for protobuf if config
// leaves the content type to the default.
func preferProtobuf(config *rest.Config) *rest.Config {
	if config == nil || config.ContentType != "" {
		return config
	}
	c := rest.CopyConfig(config)
	c.ContentType = runtime.ContentTypeProtobuf
	if c.AcceptContentTypes == "" {
		c.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	}
	return c
}

// WithCustomResyncConfig sets the resync period of the informers of the
// given objects' types, replacing the default one.
func WithCustomResyncConfig(resyncConfig map[metav1.Object]time.Duration) SharedInformerOption {
	return func(f *Factory) {
		for k, v := range resyncConfig {
			f.customResync[reflect.TypeOf(k)] = v
		}
	}
}

// WithInformerName sets the name InformerName returns; Shutdown releases
// it, as client-go's factory does.
func WithInformerName(name *cache.InformerName) SharedInformerOption {
	return func(f *Factory) { f.informerName = name }
}

// Factory is client-go's SharedInformerFactory interface over a
// factory.Factory, for code written against client-go's informers
// (f.Core().V1().Pods(), InformerFor, ForResource) to switch by its import;
// code that names resources and scopes itself, or controller-runtime, uses
// the factory.Factory it wraps directly. It implements client-go's
// informers.SharedInformerFactory (and so
// internalinterfaces.SharedInformerFactory): one informer per Go type, each
// a warmcache informer whose store is a resource of the factory.Factory's
// file (or, without a file, in memory). All methods are safe for
// concurrent use.
type Factory struct {
	wf            *factory.Factory
	client        kubernetes.Interface
	defaultResync time.Duration
	namespace     string
	tweak         internalinterfaces.TweakListOptionsFunc
	transform     cache.TransformFunc
	customResync  map[reflect.Type]time.Duration
	informerName  *cache.InformerName
	logger        klog.Logger
	// config, if set, builds the informers' list-watches (WithRESTConfig).
	config *rest.Config

	// transformVersion and indexVersion are recorded with every informer
	// (factory.WithTransformVersion, factory.WithIndexVersion).
	transformVersion, indexVersion string

	// ctx bounds the creation of stores (opening a resource of the file).
	ctx context.Context

	// mu guards the fields below.
	mu        sync.Mutex
	informers map[reflect.Type]cache.SharedIndexInformer
	fallback  map[reflect.Type]error // the informers that are client-go's, and why
	// starts records the informers started and runs the fallbacks.
	starts fallback.Starts[reflect.Type]
}

var _ clientinformers.SharedInformerFactory = (*Factory)(nil)

// NewSharedInformerFactory returns a factory of informers for all
// namespaces; see NewSharedInformerFactoryWithOptions.
func NewSharedInformerFactory(wf *factory.Factory, client kubernetes.Interface, defaultResync time.Duration) *Factory {
	return NewSharedInformerFactoryWithOptions(wf, client, defaultResync)
}

// NewSharedInformerFactoryWithOptions returns a factory whose informers
// keep their caches in wf's file and list and watch through client, as
// client-go's function of the same name, with which it shares its
// options. The Factory owns wf from then on: its Shutdown shuts wf down.
// An informers/dynamicinformer Factory may share wf (its constructor says
// what that means for Shutdown and Start). Stores are opened with
// context.Background(); see NewSharedInformerFactoryWithContext to bound
// them and give a logger.
func NewSharedInformerFactoryWithOptions(wf *factory.Factory, client kubernetes.Interface, defaultResync time.Duration, options ...SharedInformerOption) *Factory {
	return NewSharedInformerFactoryWithContext(context.Background(), wf, client, defaultResync, options...)
}

// NewSharedInformerFactoryWithContext is NewSharedInformerFactoryWithOptions
// whose stores are opened with ctx and whose log lines go to
// klog.FromContext(ctx).
func NewSharedInformerFactoryWithContext(ctx context.Context, wf *factory.Factory, client kubernetes.Interface, defaultResync time.Duration, options ...SharedInformerOption) *Factory {
	f := &Factory{
		wf: wf, client: client, defaultResync: defaultResync, namespace: metav1.NamespaceAll,
		customResync: map[reflect.Type]time.Duration{}, logger: klog.FromContext(ctx), ctx: context.WithoutCancel(ctx),
		informers: map[reflect.Type]cache.SharedIndexInformer{}, fallback: map[reflect.Type]error{},
	}
	for _, o := range options {
		o(f)
	}
	return f
}

// InformerName returns the name given by WithInformerName, or nil.
func (f *Factory) InformerName() *cache.InformerName { return f.informerName }

// InformerFor returns the informer of obj's type, creating it if needed:
// a warmcache informer listing and watching obj's resource through the
// factory's client, in the factory's namespace and tweak, with the
// indexers of the informer newFunc builds (which is never run). When obj's
// type cannot be persisted, the informer newFunc builds is used instead,
// and an error is logged (see Fallbacks). After Shutdown it is that
// informer too, which never runs, as client-go's factory returns one.
//
// newFunc's namespace and list options are not looked at: as with
// client-go's generated informers, they must be the factory's.
func (f *Factory) InformerFor(obj runtime.Object, newFunc internalinterfaces.NewInformerFunc) cache.SharedIndexInformer {
	f.mu.Lock()
	defer f.mu.Unlock()
	t := reflect.TypeOf(obj)
	if inf, ok := f.informers[t]; ok {
		return inf
	}
	resync, ok := f.customResync[t]
	if !ok {
		resync = f.defaultResync
	}
	var indexers cache.Indexers
	var clientGo cache.SharedIndexInformer
	if newFunc != nil {
		clientGo = newFunc(f.client, resync)
		indexers = clientGo.GetIndexer().GetIndexers()
	}
	inf, err := f.warmInformerLocked(obj, resync, indexers)
	if err != nil {
		if clientGo == nil {
			if r, rerr := resolve(obj); rerr == nil {
				if lw, lerr := r.client.listWatch(f.client, f.namespace, f.tweak); lerr == nil {
					clientGo = cache.NewSharedIndexInformer(lw, obj, resync, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
				}
			}
		}
		if clientGo == nil {
			f.logger.Error(err, "Cannot build an informer for this type", "type", t.String())
			return nil
		}
		if f.transform != nil {
			_ = clientGo.SetTransform(f.transform)
		}
		// After Shutdown, as client-go's: an informer that never runs.
		if !errors.Is(err, factory.ErrShutdown) {
			f.logger.Error(err, "Cannot give this informer a persistent cache; using client-go's in-memory informer", "type", t.String())
			f.fallback[t] = err
		}
		inf = clientGo
	}
	f.informers[t] = inf
	return inf
}

// warmInformerLocked returns the warmcache informer of obj's type.
func (f *Factory) warmInformerLocked(obj runtime.Object, resync time.Duration, indexers cache.Indexers) (cache.SharedIndexInformer, error) {
	r, err := resolve(obj)
	if err != nil {
		return nil, err
	}
	labelSel, fieldSel, err := SelectorsOfTweak(f.tweak)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", r.gvr, err)
	}
	scope := factory.Scope{LabelSelector: labelSel, FieldSelector: fieldSel}
	if r.client.namespaced {
		scope.Namespace = f.namespace
	}
	lw, err := f.listWatch(r, scope)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", r.gvr, err)
	}
	opts := []factory.InformerOption{
		factory.WithResyncPeriod(resync),
		factory.WithTransformVersion(f.transformVersion),
		factory.WithIndexVersion(f.indexVersion),
	}
	if f.transform != nil {
		opts = append(opts, factory.WithTransform(f.transform))
	}
	inf, err := f.wf.InformerFor(f.ctx, r.gvr, obj, lw, scope, indexers, opts...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", r.gvr, err)
	}
	return inf, nil
}

// Fallbacks returns, by type, the informers that are client-go's in-memory
// ones because their type could not be persisted, with the reason.
func (f *Factory) Fallbacks() map[reflect.Type]error {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make(map[reflect.Type]error, len(f.fallback))
	for t, err := range f.fallback {
		out[t] = err
	}
	return out
}

// Start runs every informer not yet started until stopCh is closed or
// Shutdown is called.
func (f *Factory) Start(stopCh <-chan struct{}) {
	f.StartWithContext(wait.ContextForChannel(stopCh))
}

// StartWithContext runs every informer not yet started until ctx is done
// or Shutdown is called, as client-go's: an informer created later runs
// from the next Start, on that Start's context. Once the factory.Factory
// was shut down (by this Factory's Shutdown, or directly, or by another
// Factory sharing it) it starts nothing, as client-go's after Shutdown.
func (f *Factory) StartWithContext(ctx context.Context) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.starts.Start(ctx, f.startFactory, f.informers, func(t reflect.Type) bool { _, ok := f.fallback[t]; return ok })
}

// startFactory starts the factory.Factory's informers on ctx, and
// reports false, starting nothing, once it has shut down. A Shutdown
// between its check and the Start (the Start then starts nothing) is a
// Shutdown just after the Start: the informers stop unsynced, and
// WaitForCacheSync waits for its context, as client-go's.
func (f *Factory) startFactory(ctx context.Context) bool {
	if f.wf.Err() != nil {
		return false
	}
	f.wf.Start(ctx)
	return true
}

// Shutdown stops every informer, waits for them, and shuts the
// factory.Factory down, which flushes and closes the file. An error of the
// file is logged; Close returns it. Shutdown may be called more than once.
func (f *Factory) Shutdown() {
	if err := f.Close(); err != nil {
		f.logger.Error(err, "Shutting the informer factory down")
	}
}

// Close is Shutdown returning the error of closing the file.
func (f *Factory) Close() error {
	f.starts.Close(&f.mu)
	err := f.wf.Shutdown()
	f.informerName.Release()
	return err
}

// WaitForCacheSync waits until every started informer has synced or
// stopCh is closed, and returns each informer's state by type. A false
// value means that informer's cache is not ready: check it.
func (f *Factory) WaitForCacheSync(stopCh <-chan struct{}) map[reflect.Type]bool {
	return f.WaitForCacheSyncWithContext(wait.ContextForChannel(stopCh)).Synced
}

// WaitForCacheSyncWithContext waits until every started informer has
// synced or ctx is done; the result's Err is set if one has not.
func (f *Factory) WaitForCacheSyncWithContext(ctx context.Context) cache.SyncResult {
	f.mu.Lock()
	infs := map[reflect.Type]cache.SharedIndexInformer{}
	for t, inf := range f.informers {
		if f.starts.Started(t) {
			infs[t] = inf
		}
	}
	f.mu.Unlock()
	checkers := make([]cache.DoneChecker, 0, len(infs))
	for _, inf := range infs {
		checkers = append(checkers, inf.HasSyncedChecker())
	}
	cache.WaitFor(ctx, "", checkers...)
	res := cache.SyncResult{Synced: make(map[reflect.Type]bool, len(infs))}
	for t, inf := range infs {
		res.Synced[t] = inf.HasSynced()
		if !res.Synced[t] {
			res.Err = context.Cause(ctx)
		}
	}
	return res
}
