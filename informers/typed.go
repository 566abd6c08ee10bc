package informers

import (
	"context"
	"fmt"
	"reflect"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/warmcache/warmcache/factory"
)

// typedClient says how kubernetes.Interface reaches the typed client of
// one resource: client.<Group>().<Resource>(namespace) for a namespaced
// resource, client.<Group>().<Resource>() for a cluster-scoped one.
type typedClient struct {
	group, resource string
	namespaced      bool
}

var (
	typedOnce   sync.Once
	typedByList map[reflect.Type]typedClient // keyed by the list's pointer type, *corev1.PodList
)

// typedClients walks kubernetes.Interface's method set once: every group
// version accessor (CoreV1, AppsV1, ...) and on it every method returning
// a resource client with List(ctx, ListOptions) (*XList, error) and Watch.
func typedClients() map[reflect.Type]typedClient {
	typedOnce.Do(func() {
		typedByList = map[reflect.Type]typedClient{}
		ctxType := reflect.TypeFor[context.Context]()
		optsType := reflect.TypeFor[metav1.ListOptions]()
		errType := reflect.TypeFor[error]()
		ci := reflect.TypeFor[kubernetes.Interface]()
		for i := range ci.NumMethod() {
			g := ci.Method(i)
			if g.Type.NumIn() != 0 || g.Type.NumOut() != 1 || g.Type.Out(0).Kind() != reflect.Interface {
				continue
			}
			gt := g.Type.Out(0)
			for j := range gt.NumMethod() {
				r := gt.Method(j)
				namespaced := r.Type.NumIn() == 1 && r.Type.In(0).Kind() == reflect.String
				if (r.Type.NumIn() != 0 && !namespaced) || r.Type.NumOut() != 1 || r.Type.Out(0).Kind() != reflect.Interface {
					continue
				}
				list, ok := r.Type.Out(0).MethodByName("List")
				if !ok || list.Type.NumIn() != 2 || list.Type.In(0) != ctxType || list.Type.In(1) != optsType ||
					list.Type.NumOut() != 2 || list.Type.Out(1) != errType || list.Type.Out(0).Kind() != reflect.Pointer {
					continue
				}
				if _, ok := r.Type.Out(0).MethodByName("Watch"); !ok {
					continue
				}
				typedByList[list.Type.Out(0)] = typedClient{group: g.Name, resource: r.Name, namespaced: namespaced}
			}
		}
	})
	return typedByList
}

// listWatch returns a ListerWatcher through client's typed client for tc,
// in namespace (ignored for a cluster-scoped resource), with tweak applied
// to every request, and client-go's WatchList semantics of client (as the
// generated informers do).
func (tc typedClient) listWatch(client kubernetes.Interface, namespace string, tweak func(*metav1.ListOptions)) (cache.ListerWatcher, error) {
	gm := reflect.ValueOf(client).MethodByName(tc.group)
	if !gm.IsValid() {
		return nil, fmt.Errorf("%w: %T has no method %s", ErrNoTypedClient, client, tc.group)
	}
	gv := gm.Call(nil)[0]
	if gv.IsNil() {
		return nil, fmt.Errorf("%w: %T.%s() returned nil", ErrNoTypedClient, client, tc.group)
	}
	rm := gv.MethodByName(tc.resource)
	var args []reflect.Value
	if tc.namespaced {
		args = []reflect.Value{reflect.ValueOf(namespace)}
	}
	rc := rm.Call(args)[0]
	if rc.IsNil() {
		return nil, fmt.Errorf("%w: %T.%s().%s() returned nil", ErrNoTypedClient, client, tc.group, tc.resource)
	}
	list, watchFn := rc.MethodByName("List"), rc.MethodByName("Watch")
	call := func(m reflect.Value, ctx context.Context, o metav1.ListOptions) (any, error) {
		if tweak != nil {
			tweak(&o)
		}
		out := m.Call([]reflect.Value{reflect.ValueOf(ctx), reflect.ValueOf(o)})
		err, _ := out[1].Interface().(error)
		return out[0].Interface(), err
	}
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			obj, err := call(list, ctx, o)
			if err != nil {
				return nil, err
			}
			return obj.(runtime.Object), nil
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			w, err := call(watchFn, ctx, o)
			if err != nil {
				return nil, err
			}
			return w.(watch.Interface), nil
		},
	}
	return cache.ToListWatcherWithWatchListSemantics(lw, client), nil
}

// listWatch returns the ListerWatcher of resource r in scope: through the
// factory's REST config if it has one (WithRESTConfig), with the tweak
// applied to every request before the scope's selectors, which the tweak
// set (scopeOfTweak) and which therefore come out the same, else through
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
