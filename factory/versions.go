package factory

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/metadata"

	"github.com/warmcache/warmcache/reflector"
)

// listVersions returns the reflector's ListVersions for gvr's informer in
// scope (reflector.Options.ListVersions): the metadata-only LIST of the
// same objects, with which a warm start of a store of up to
// reflector.DefaultVersionCheckLimit objects finds whether, and which of,
// its objects changed while it was down, instead of waiting for the
// watch cache's bookmark. It has a client of its own (and so its own rate
// limit, as each informer's ListerWatcher has). nil without a REST
// config, and for a shard (a metadata-only list carries no ShardInfo to
// check, see MetadataListWatch): such a warm start waits for the
// bookmark.
func (f *Factory) listVersions(gvr schema.GroupVersionResource, scope Scope) reflector.ListVersionsFunc {
	if f.opts.RESTConfig == nil || scope.Shard != "" {
		return nil
	}
	mc, err := metadata.NewForConfig(f.opts.RESTConfig)
	if err != nil {
		f.logger.V(2).Info("No metadata client for the warm start's version check; it will wait for the server's bookmark", "resource", gvr.String(), "err", err)
		return nil
	}
	var ri metadata.ResourceInterface = mc.Resource(gvr)
	if scope.Namespace != "" {
		ri = mc.Resource(gvr).Namespace(scope.Namespace)
	}
	return func(ctx context.Context, o metav1.ListOptions) (*metav1.PartialObjectMetadataList, error) {
		tweak(scope, &o)
		return ri.List(ctx, o)
	}
}
