package dynamicinformer

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	clientdynamicinformer "k8s.io/client-go/dynamic/dynamicinformer"
	clientinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/warmcache/warmcache/factory"
	"github.com/warmcache/warmcache/informers"
	"github.com/warmcache/warmcache/informers/internal/fallback"
)

// Factory is client-go's dynamicinformer.DynamicSharedInformerFactory over
// a factory.Factory: one informer per resource, each a warmcache informer
// of *unstructured.Unstructured objects whose store is a resource of the
// factory.Factory's file (factory.Factory.ForDynamic), listed and watched
// through the dynamic client the Factory was given. An informer that
// cannot be persisted is client-go's, in memory, with an error logged
// (Fallbacks). All methods are safe for concurrent use.
type Factory struct {
	wf            *factory.Factory
	client        dynamic.Interface
	defaultResync time.Duration
	namespace     string
	tweak         clientdynamicinformer.TweakListOptionsFunc
	logger        klog.Logger
	// ctx bounds the creation of stores (opening a resource of the file).
	ctx context.Context

	// mu guards the fields below.
	mu        sync.Mutex
	informers map[schema.GroupVersionResource]clientinformers.GenericInformer
	fallback  map[schema.GroupVersionResource]error
	// starts records the informers started and runs the fallbacks.
	starts fallback.Starts[schema.GroupVersionResource]
}

var _ clientdynamicinformer.DynamicSharedInformerFactory = (*Factory)(nil)

// NewDynamicSharedInformerFactory returns a factory of informers for all
// namespaces; see NewFilteredDynamicSharedInformerFactory.
func NewDynamicSharedInformerFactory(wf *factory.Factory, client dynamic.Interface, defaultResync time.Duration) *Factory {
	return NewFilteredDynamicSharedInformerFactory(wf, client, defaultResync, metav1.NamespaceAll, nil)
}

// NewFilteredDynamicSharedInformerFactory returns a factory whose
// informers keep their caches in wf's file and list and watch through
// client, in namespace (every namespace if empty), with the selectors
// tweakListOptions sets, as client-go's function of the same name. The
// tweak is called once per informer on empty list options and must set
// only LabelSelector, FieldSelector, Limit or TimeoutSeconds (see package
// informers): the selectors are recorded as the informer's scope and sent
// with every request (the reflector sets its own Limit and timeouts); an
// informer whose tweak sets anything else is client-go's, in memory.
//
// The Factory owns wf from then on: its Shutdown shuts wf down, with
// every informer on it. A package informers Factory may share wf (typed
// and dynamic informers in one file); the first of them shut down stops
// the warmcache informers of both, and the other's Start then starts
// nothing (its client-go fallbacks run until their Start's context ends
// or its own Shutdown). An informer is one per resource and scope in wf:
// a second Factory on wf asking for the same resource and scope gets the
// informer the first created, listing through the first one's client.
// Stores are opened with context.Background(); see
// NewFilteredDynamicSharedInformerFactoryWithContext.
func NewFilteredDynamicSharedInformerFactory(wf *factory.Factory, client dynamic.Interface, defaultResync time.Duration, namespace string, tweakListOptions clientdynamicinformer.TweakListOptionsFunc) *Factory {
	return NewFilteredDynamicSharedInformerFactoryWithContext(context.Background(), wf, client, defaultResync, namespace, tweakListOptions)
}

// NewFilteredDynamicSharedInformerFactoryWithContext is
// NewFilteredDynamicSharedInformerFactory whose stores are opened with ctx
// and whose log lines go to klog.FromContext(ctx).
func NewFilteredDynamicSharedInformerFactoryWithContext(ctx context.Context, wf *factory.Factory, client dynamic.Interface, defaultResync time.Duration, namespace string, tweakListOptions clientdynamicinformer.TweakListOptionsFunc) *Factory {
	return &Factory{
		wf: wf, client: client, defaultResync: defaultResync, namespace: namespace, tweak: tweakListOptions,
		logger: klog.FromContext(ctx), ctx: context.WithoutCancel(ctx),
		informers: map[schema.GroupVersionResource]clientinformers.GenericInformer{},
		fallback:  map[schema.GroupVersionResource]error{},
	}
}

// ForResource returns the informer of gvr, creating it if needed: a
// warmcache informer (factory.Factory.ForDynamic) with client-go's
// namespace index, whose lister's List methods hand the namespace and the
// label selector to the store, which decodes only the objects they select
// (informers.NewGenericInformer). An informer created after Start runs from the next
// Start, as client-go's. When gvr's informer cannot be persisted (the
// tweak, a file that cannot be written), the informer is client-go's
// dynamic informer, in memory, and an error is logged (see Fallbacks).
// After Shutdown it is client-go's informer too, which never runs, as
// client-go's factory returns one.
func (f *Factory) ForResource(gvr schema.GroupVersionResource) clientinformers.GenericInformer {
	f.mu.Lock()
	defer f.mu.Unlock()
	if inf, ok := f.informers[gvr]; ok {
		return inf
	}
	inf, err := f.warmInformerLocked(gvr)
	if err != nil {
		// After Shutdown, as client-go's: an informer that never runs.
		if !errors.Is(err, factory.ErrShutdown) {
			f.logger.Error(err, "Cannot give this informer a persistent cache; using client-go's in-memory informer", "resource", gvr.String())
			f.fallback[gvr] = err
		}
		inf = clientdynamicinformer.NewFilteredDynamicInformer(f.client, gvr, f.namespace, f.defaultResync,
			cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}, f.tweak)
	}
	f.informers[gvr] = inf
	return inf
}

// warmInformerLocked returns the warmcache informer of gvr.
func (f *Factory) warmInformerLocked(gvr schema.GroupVersionResource) (clientinformers.GenericInformer, error) {
	labelSel, fieldSel, err := informers.SelectorsOfTweak(f.tweak)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", gvr, err)
	}
	scope := factory.Scope{Namespace: f.namespace, LabelSelector: labelSel, FieldSelector: fieldSel}
	inf, err := f.wf.ForDynamic(f.ctx, gvr, scope, factory.WithDynamicClient(f.client), factory.WithResyncPeriod(f.defaultResync))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", gvr, err)
	}
	return informers.NewGenericInformer(inf, gvr.GroupResource()), nil
}

// Fallbacks returns, by resource, the informers that are client-go's
// in-memory ones because they could not be persisted, with the reason.
func (f *Factory) Fallbacks() map[schema.GroupVersionResource]error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return maps.Clone(f.fallback)
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
	infs := make(map[schema.GroupVersionResource]cache.SharedIndexInformer, len(f.informers))
	for gvr, inf := range f.informers {
		infs[gvr] = inf.Informer()
	}
	f.starts.Start(ctx, f.startFactory, infs, func(gvr schema.GroupVersionResource) bool { _, ok := f.fallback[gvr]; return ok })
}

// WaitForCacheSync waits until every started informer has synced or
// stopCh is closed, and returns each informer's state by resource. A
// false value means that informer's cache is not ready: check it.
func (f *Factory) WaitForCacheSync(stopCh <-chan struct{}) map[schema.GroupVersionResource]bool {
	f.mu.Lock()
	infs := map[schema.GroupVersionResource]cache.SharedIndexInformer{}
	for gvr, inf := range f.informers {
		if f.starts.Started(gvr) {
			infs[gvr] = inf.Informer()
		}
	}
	f.mu.Unlock()
	res := make(map[schema.GroupVersionResource]bool, len(infs))
	for gvr, inf := range infs {
		res[gvr] = cache.WaitForCacheSync(stopCh, inf.HasSynced)
	}
	return res
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
		f.logger.Error(err, "Shutting the dynamic informer factory down")
	}
}

// Close is Shutdown returning the error of closing the file.
func (f *Factory) Close() error {
	f.starts.Close(&f.mu)
	return f.wf.Shutdown()
}
