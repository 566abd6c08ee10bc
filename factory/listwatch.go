package factory

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/warmcache/warmcache/factory/internal/watchdecode"
)

// TypedListWatch returns a ListerWatcher for the typed resource gvr in
// scope, through a REST client built from config for gvr's group version
// with client-go's kubernetes scheme (or s, if not nil). With a shard in
// scope, a list whose answer is not that shard (no ListMeta.ShardInfo, or
// another's) fails with ErrShardIgnored, and a watch drops the events of
// objects outside the shard (see shardEventFilter).
//
// Each object it decodes from protobuf carries the message it arrived in
// (package store/wire), which the bolt store writes instead of marshalling
// the object again. A wrapper that changes the objects it passes on must
// call wire.Forget on each first, or the store writes the server's bytes
// for an object the handlers saw changed; a transform set on the informer
// (WithTransform) needs nothing.
func TypedListWatch(config *rest.Config, s *runtime.Scheme, gvr schema.GroupVersionResource, scope Scope) (cache.ListerWatcher, error) {
	return typedListWatch(config, s, gvr, scope, nil)
}

// typedListWatch is TypedListWatch whose watch streams read ahead within
// readAhead (nil: the process's default budget).
func typedListWatch(config *rest.Config, s *runtime.Scheme, gvr schema.GroupVersionResource, scope Scope, readAhead *watchdecode.Budget) (cache.ListerWatcher, error) {
	if config == nil {
		return nil, fmt.Errorf("%w: no REST config for %s", ErrResource, gvr)
	}
	c, err := restClientFor(config, s, gvr.GroupVersion(), readAhead)
	if err != nil {
		return nil, fmt.Errorf("%w: REST client for %s: %w", ErrResource, gvr, err)
	}
	lw := cache.NewFilteredListWatchFromClient(c, gvr.Resource, scope.Namespace, func(o *metav1.ListOptions) { tweak(scope, o) })
	return ownShard(lw, scope.Shard), nil
}

// DynamicListWatch returns a ListerWatcher of unstructured objects of gvr
// in scope. With a shard in scope, a list whose answer is not that shard
// (no metadata.shardInfo, or another's) fails with ErrShardIgnored, and a
// watch drops the events of objects outside the shard. On a client that
// cannot stream a list (client-go's fake dynamic client) the reflector
// lists with LIST, as client-go's informers do.
func DynamicListWatch(client dynamic.Interface, gvr schema.GroupVersionResource, scope Scope) cache.ListerWatcher {
	var ri dynamic.ResourceInterface = client.Resource(gvr)
	if scope.Namespace != "" {
		ri = client.Resource(gvr).Namespace(scope.Namespace)
	}
	return withoutWatchList(ownShard(&cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			tweak(scope, &o)
			return ri.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			tweak(scope, &o)
			return ri.Watch(ctx, o)
		},
	}, scope.Shard), client)
}
