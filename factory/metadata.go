package factory

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/sharding"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/watchlist"

	"github.com/warmcache/warmcache/informer"
	"github.com/warmcache/warmcache/store/codec"
)

// MetadataKind is the kind a metadata-only informer records in its
// identity in place of the resource's kind: its objects are
// *metav1.PartialObjectMetadata, so its data is never shared with the
// full-object informer of the same resource and scope.
const MetadataKind = "PartialObjectMetadata"

// UnstructuredKind is the kind an informer of *unstructured.Unstructured
// objects records in its identity when its kind also has a Go type in the
// factory's scheme (controller-runtime keeps both informers for one
// kind): its data is never shared with the typed informer's. Unstructured
// informers of other kinds (custom resources) record their own kind.
const UnstructuredKind = "Unstructured"

// metaScheme knows the meta.k8s.io/v1 types (PartialObjectMetadata), for
// the protobuf codec of metadata-only stores.
var metaScheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := metav1.AddMetaToScheme(s); err != nil {
		panic(err)
	}
	return s
}()

// isMetadata reports whether example is a metadata-only object.
func isMetadata(example runtime.Object) bool {
	_, ok := example.(*metav1.PartialObjectMetadata)
	return ok
}

// codecFor returns the store codec of example's objects: protobuf for
// metadata-only objects, else codec.ForObject.
func codecFor(s *runtime.Scheme, example runtime.Object) (codec.Codec, error) {
	if isMetadata(example) {
		return codec.Protobuf(metaScheme), nil
	}
	return codec.ForObject(s, example)
}

// kindOf returns the kind the identity records for example: an
// unstructured object's own, MetadataKind for a metadata-only one, else
// the scheme's.
func kindOf(s *runtime.Scheme, example runtime.Object) string {
	switch o := example.(type) {
	case *unstructured.Unstructured:
		if s.Recognizes(o.GroupVersionKind()) {
			return UnstructuredKind
		}
		return o.GetKind()
	case *metav1.PartialObjectMetadata:
		return MetadataKind
	}
	if gvks, _, err := s.ObjectKinds(example); err == nil && len(gvks) > 0 {
		return gvks[0].Kind
	}
	return ""
}

// gvkOf returns the kind of the objects example stands for: the TypeMeta
// of an unstructured or metadata-only object (which must be set), else the
// scheme's. The zero kind means unknown.
func gvkOf(s *runtime.Scheme, example runtime.Object) schema.GroupVersionKind {
	switch o := example.(type) {
	case *unstructured.Unstructured:
		return o.GroupVersionKind()
	case *metav1.PartialObjectMetadata:
		return o.GroupVersionKind()
	}
	if gvks, _, err := s.ObjectKinds(example); err == nil && len(gvks) > 0 {
		return gvks[0]
	}
	return schema.GroupVersionKind{}
}

// nameSuffix distinguishes the name of a metadata-only informer, or of an
// unstructured one of a typed kind, from the typed informer's of the same
// resource and scope.
func nameSuffix(s *runtime.Scheme, example runtime.Object) string {
	switch kindOf(s, example) {
	case MetadataKind:
		return " metadata"
	case UnstructuredKind:
		return " unstructured"
	}
	return ""
}

// MetadataListWatch returns a ListerWatcher of gvr's objects in scope as
// *metav1.PartialObjectMetadata (client-go's metadata client: the
// apiserver sends only metadata, as PartialObjectMetadataList in protobuf
// or JSON). Each object's TypeMeta is set to kind of gvr's group version,
// as controller-runtime's metadata informers do.
//
// With a shard in scope, a list whose answer is not that shard fails with
// ErrShardIgnored. kube-apiserver 1.36 sends a metadata-only list without
// ListMeta.ShardInfo even when it applied the selector, so when the answer
// has none, each of its objects is checked against the selector's ranges
// (the FNV-1a hash of its uid or namespace, as the server computes it): an
// object outside them means the server sent the whole collection. A
// selector that is not shardRange terms joined with || cannot be checked
// that way, and every list without ShardInfo fails with ErrShardIgnored;
// ForMetadata refuses such a selector. A watch drops the events of objects
// outside the shard's ranges.
func MetadataListWatch(client metadata.Interface, gvr schema.GroupVersionResource, kind string, scope Scope) cache.ListerWatcher {
	var ri metadata.ResourceInterface = client.Resource(gvr)
	if scope.Namespace != "" {
		ri = client.Resource(gvr).Namespace(scope.Namespace)
	}
	gvk := gvr.GroupVersion().WithKind(kind)
	ranges, parsed := parseShard(scope.Shard)
	shardEvents := newShardEventFilter(scope.Shard)
	return checkedListWatch{shard: scope.Shard, noWatchList: watchlist.DoesClientNotSupportWatchListSemantics(client), ListWatch: &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			tweak(scope, &o)
			l, err := ri.List(ctx, o)
			if err != nil {
				return l, err
			}
			if err := checkMetadataShard(scope.Shard, ranges, parsed, l); err != nil {
				return nil, err
			}
			for i := range l.Items {
				l.Items[i].SetGroupVersionKind(gvk)
			}
			return l, nil
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			tweak(scope, &o)
			w, err := ri.Watch(ctx, o)
			if err != nil {
				return nil, err
			}
			inShard := shardEvents.filter(ctx)
			return newFilterWatch(w, func(e *watch.Event) bool {
				if !inShard(e) {
					return false
				}
				if m, ok := e.Object.(*metav1.PartialObjectMetadata); ok {
					m.SetGroupVersionKind(gvk)
				}
				return true
			}), nil
		},
	}}
}

// checkMetadataShard checks a metadata-only list sent with shard, whose
// ranges are ranges if parsed: its ShardInfo when it has one, else its
// objects.
func checkMetadataShard(shard string, ranges []sharding.ShardRangeRequirement, parsed bool, l *metav1.PartialObjectMetadataList) error {
	if shard == "" {
		return nil
	}
	if _, ok := shardInfoOf(l); ok {
		return checkShardList(shard, l)
	}
	if !parsed {
		return fmt.Errorf("%w: sent shard selector %q, the metadata-only list response has no ListMeta.ShardInfo, and its objects cannot be checked against a selector that is not shardRange(...) terms joined with ||", ErrShardIgnored, shard)
	}
	return checkShardItems(shard, ranges, l)
}

// ForMetadata returns the metadata-only informer of gvr's objects of kind
// (for example "Secret" for secrets): its objects are
// *metav1.PartialObjectMetadata with that TypeMeta, listed and watched
// through client-go's metadata client built from RESTConfig, and stored
// under their own identity (MetadataKind), apart from ForResource's
// informer of the same resource and scope.
func (f *Factory) ForMetadata(ctx context.Context, gvr schema.GroupVersionResource, kind string, scope Scope, opts ...InformerOption) (*informer.Informer, error) {
	if f.opts.RESTConfig == nil {
		return nil, fmt.Errorf("%w: %s: no REST config for a metadata client", ErrResource, gvr)
	}
	if kind == "" {
		return nil, fmt.Errorf("%w: metadata-only %s needs its kind", ErrInvalidOptions, gvr)
	}
	scope, err := scope.Canonical()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidOptions, err)
	}
	if _, ok := parseShard(scope.Shard); scope.Shard != "" && !ok {
		return nil, fmt.Errorf("%w: metadata-only %s: shard selector %q is not shardRange(field, '0x<16 hex digits>', '0x<16 hex digits>') terms joined with ||: the objects of a metadata-only list, which carries no ShardInfo, could not be checked against it", ErrInvalidOptions, gvr, scope.Shard)
	}
	mc, err := metadataClientFor(f.opts.RESTConfig, f.readAhead)
	if err != nil {
		return nil, fmt.Errorf("%w: metadata client for %s: %w", ErrResource, gvr, err)
	}
	example := &metav1.PartialObjectMetadata{}
	example.SetGroupVersionKind(gvr.GroupVersion().WithKind(kind))
	return f.InformerFor(ctx, gvr, example, MetadataListWatch(mc, gvr, kind, scope), scope, nil, opts...)
}
