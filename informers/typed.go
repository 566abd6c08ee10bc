package informers

import (
	"context"
	"fmt"
	"maps"
	"reflect"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/warmcache/warmcache/factory"
)

// typedClient is how kubernetes.Interface reaches the typed client of one
// resource: client.<group>().<resource>(namespace) for a namespaced
// resource, client.<group>().<resource>() for a cluster-scoped one. The
// tables of them, one per API group, are generated (zz_generated_<group>.go)
// rather than found by reflection: a program that looks methods up by name keeps
// every exported method of every type the linker reaches (the typed
// clients' Create, Update, Apply ... and their apply configurations), which
// made a controller's binary twice the size of client-go's.
type typedClient struct {
	group, resource string
	namespaced      bool
	// open returns the list and watch of the typed client of client in
	// namespace (ignored for a cluster-scoped resource), or an error
	// wrapping ErrNoTypedClient when an accessor returns nil.
	open func(client kubernetes.Interface, namespace string) (listFunc, watchFunc, error)
}

type (
	listFunc  func(context.Context, metav1.ListOptions) (runtime.Object, error)
	watchFunc func(context.Context, metav1.ListOptions) (watch.Interface, error)
)

// typedClientOf returns the typed client of kubernetes.Interface whose
// list is of type list (*corev1.PodList).
func typedClientOf(list reflect.Type) (typedClient, bool) {
	tc, ok := typedClients[list]
	return tc, ok
}

// joinTypedClients returns the union of the API groups' tables of typed
// clients (typedClients, zz_generated.go). No two groups list the same type:
// the generator fails if they do.
func joinTypedClients(tables ...map[reflect.Type]typedClient) map[reflect.Type]typedClient {
	out := map[reflect.Type]typedClient{}
	for _, t := range tables {
		maps.Copy(out, t)
	}
	return out
}

// typedListWatch returns the list and watch of r, a typed client of
// client (corev1client.PodInterface), or an error wrapping
// ErrNoTypedClient naming accessor (CoreV1().Pods()) when r is nil.
func typedListWatch[L runtime.Object](client kubernetes.Interface, accessor string, r resourceClient[L]) (listFunc, watchFunc, error) {
	if r == nil {
		return nil, nil, noTypedClient(client, accessor)
	}
	return func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
		l, err := r.List(ctx, o)
		if err != nil {
			return nil, err
		}
		return l, nil
	}, r.Watch, nil
}

// resourceClient is the typed client of one resource (corev1client.PodInterface)
// as typedListWatch uses it: List, whose result L is the resource's list
// (*corev1.PodList), and Watch.
type resourceClient[L runtime.Object] interface {
	List(context.Context, metav1.ListOptions) (L, error)
	Watch(context.Context, metav1.ListOptions) (watch.Interface, error)
}

// noTypedClient is the error of an accessor of client that returned nil.
func noTypedClient(client kubernetes.Interface, accessor string) error {
	return fmt.Errorf("%w: %T.%s returned nil", ErrNoTypedClient, client, accessor)
}

// listWatch returns a ListerWatcher through client's typed client for tc,
// in namespace (ignored for a cluster-scoped resource), with tweak applied
// to every request, and client-go's WatchList semantics of client (as the
// generated informers do).
func (tc typedClient) listWatch(client kubernetes.Interface, namespace string, tweak func(*metav1.ListOptions)) (cache.ListerWatcher, error) {
	list, watchFn, err := tc.open(client, namespace)
	if err != nil {
		return nil, err
	}
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			if tweak != nil {
				tweak(&o)
			}
			return list(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			if tweak != nil {
				tweak(&o)
			}
			return watchFn(ctx, o)
		},
	}
	return cache.ToListWatcherWithWatchListSemantics(lw, client), nil
}

// listWatch returns the ListerWatcher of resource r in scope: through the
// factory's REST config if it has one (WithRESTConfig), with the tweak
// applied to every request before the scope's selectors, which the tweak
// set (SelectorsOfTweak) and which therefore come out the same, else through
// the client's typed client.
func (f *Factory) listWatch(r typedResource, scope factory.Scope) (cache.ListerWatcher, error) {
	if f.config == nil {
		return r.client.listWatch(f.client, scope.Namespace, f.tweak)
	}
	lw, err := factory.TypedListWatch(f.config, nil, r.gvr, scope)
	if err != nil || f.tweak == nil {
		return lw, err
	}
	inner := cache.ToListerWatcherWithContext(lw)
	return &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			f.tweak(&o)
			return inner.ListWithContext(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			f.tweak(&o)
			return inner.WatchWithContext(ctx, o)
		},
	}, nil
}
