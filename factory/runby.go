package factory

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"

	"github.com/warmcache/warmcache/informer"
)

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
