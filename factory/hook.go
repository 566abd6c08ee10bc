package factory

import (
	"context"
	"fmt"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"

	"github.com/warmcache/warmcache/informer"
)

// NewInformerFunc is the signature of controller-runtime's
// cache.Options.NewInformer hook (and of client-go's
// cache.NewSharedIndexInformer).
type NewInformerFunc func(lw cache.ListerWatcher, example runtime.Object, resync time.Duration, indexers cache.Indexers) cache.SharedIndexInformer

// NewInformerFunc returns a function for controller-runtime's
// cache.Options.NewInformer: each informer controller-runtime creates gets
// a store in the factory's file. The caller (controller-runtime) runs the
// informers; Factory.Start does not, and Factory.Shutdown must be called
// only after they have stopped.
//
// The resource is derived from example's kind (the scheme's, or an
// unstructured object's) with the conventional plural. scopeOf returns the
// namespace and selectors that lw applies, which the identity in the file
// must record; nil means Scope{} (everything). Because the hook cannot
// return an error, a kind that cannot be resolved, a scope already in use
// or a store that cannot be opened is logged and served by client-go's
// in-memory informer instead: the controller keeps working, without
// persistence. opts apply to every informer, as to InformerFor (for
// example WithTransformVersion, whenever the transforms controller-runtime
// sets change meaning); the resync controller-runtime gives replaces
// WithResyncPeriod.
func (f *Factory) NewInformerFunc(ctx context.Context, scopeOf func(example runtime.Object) Scope, opts ...InformerOption) NewInformerFunc {
	return func(lw cache.ListerWatcher, example runtime.Object, resync time.Duration, indexers cache.Indexers) cache.SharedIndexInformer {
		inf, err := f.hookInformer(ctx, lw, example, resync, indexers, scopeOf, opts)
		if err != nil {
			f.logger.Error(err, "Cannot give this informer a persistent cache; using client-go's in-memory informer", "type", fmt.Sprintf("%T", example))
			return cache.NewSharedIndexInformer(lw, example, resync, indexers)
		}
		return inf
	}
}

// HookInformer is NewInformerFunc's work for one informer whose scope the
// caller knows, with errors returned instead of a fallback: it returns a
// persistent informer of example's kind (typed, *unstructured.Unstructured
// or *metav1.PartialObjectMetadata with its TypeMeta set) listed and
// watched by lw in scope. The caller runs the informer (Factory.Start does
// not) and must have stopped it before Factory.Shutdown. An informer of
// the same resource and scope that exists already is an error wrapping
// ErrResource: lw may differ from its own. opts apply as to InformerFor
// (WithTransformVersion, WithIndexVersion, WithHotBytes ...); resync
// replaces WithResyncPeriod.
func (f *Factory) HookInformer(ctx context.Context, lw cache.ListerWatcher, example runtime.Object, resync time.Duration, indexers cache.Indexers, scope Scope, opts ...InformerOption) (*informer.Informer, error) {
	return f.hookInformer(ctx, lw, example, resync, indexers, func(runtime.Object) Scope { return scope }, opts)
}

func (f *Factory) hookInformer(ctx context.Context, lw cache.ListerWatcher, example runtime.Object, resync time.Duration, indexers cache.Indexers, scopeOf func(runtime.Object) Scope, opts []InformerOption) (*informer.Informer, error) {
	gvk := gvkOf(f.opts.Scheme, example)
	if gvk.Kind == "" || gvk.Version == "" {
		return nil, fmt.Errorf("%w: no kind for %T", ErrResource, example)
	}
	gvr, _ := meta.UnsafeGuessKindToResource(gvk)
	scope := Scope{}
	if scopeOf != nil {
		scope = scopeOf(example)
	}
	scope, err := scope.Canonical()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidOptions, err)
	}
	name := nameOf(gvr, scope) + nameSuffix(f.opts.Scheme, example)
	f.mu.Lock()
	_, exists := f.informers[name]
	f.mu.Unlock()
	if exists {
		return nil, fmt.Errorf("%w: an informer for %s exists already; its ListerWatcher may differ", ErrResource, name)
	}
	inf, err := f.InformerFor(ctx, gvr, example, lw, scope, indexers, append(slices.Clone(opts), WithResyncPeriod(resync))...)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	f.started[name] = true // run by the caller
	f.mu.Unlock()
	return inf, nil
}
