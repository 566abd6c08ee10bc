package factory

import (
	"maps"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"
)

// DefaultQueueBudget is the default Options.QueueBudget: 20,000 decoded
// objects, twenty informers at their default QueueCapacity
// (informer.DefaultQueueCapacity), so that one informer alone, or a few,
// are never slowed by it. With it, fifty informers cold-starting at once
// over a million objects stayed under a 1 GiB GOMEMLIMIT, where without a
// budget they passed 4.5 GB; a budget of 5,000 peaked no lower at 200k
// objects (the informers' list pages dominate then; see QueueBudget).
const DefaultQueueBudget = 20000

// An InformerOption configures an informer that ForResource, ForDynamic
// or InformerFor creates. Indexers also apply to an informer that exists
// already (the missing ones are added to it); the other options apply only
// when the call creates the informer.
type InformerOption func(*informerConfig)

type informerConfig struct {
	indexers         cache.Indexers
	transform        cache.TransformFunc
	transformVersion string
	indexVersion     string
	resync           *time.Duration
	hotBytes         *int64
	sealing          sealing
	dynamic          dynamic.Interface
}

// WithIndexers gives the informer these indexes from its creation, so
// that its store is opened with them: a warm start finds the index entries
// it recorded instead of rebuilding them by decoding every object, which
// AddIndexers after creation would do. Every informer also has client-go's
// namespace index (cache.NamespaceIndex), as client-go's and
// controller-runtime's informers do.
//
// The file keeps index entries across restarts while the index names are
// the same; it cannot see a function's code. When an index function
// changes meaning under the same name, change WithIndexVersion too, or a
// warm start answers ByIndex from the entries the old function filed.
func WithIndexers(indexers cache.Indexers) InformerOption {
	return func(c *informerConfig) {
		if c.indexers == nil {
			c.indexers = cache.Indexers{}
		}
		maps.Copy(c.indexers, indexers)
	}
}

// WithTransform sets the informer's transform (Informer.SetTransform)
// before it can start. The objects stored in the file are the transformed
// ones: when the function changes what it keeps or how it rewrites
// objects, change WithTransformVersion too, or a warm start may serve
// objects shaped by the old function. A change that shows on the
// resource's sample object (see the package doc) is found without it: the
// stored objects are relisted, with a log line. Set the transform with
// this option rather than with Informer.SetTransform, which the factory
// does not see when it checks the stored objects.
func WithTransform(fn cache.TransformFunc) InformerOption {
	return func(c *informerConfig) { c.transform = fn }
}

// WithTransformVersion records version as the version of the informer's
// transform (WithTransform, or one set later with Informer.SetTransform)
// in the file, as bolt.ResourceOptions.TransformVersion. Change it
// whenever the transform changes meaning, as IndexVersion for an index
// function: a warm start that finds another version recorded (adding,
// removing or changing a transform included) discards the stored objects,
// logs why, and relists, so that no object shaped by the old transform is
// served. Default "": the informer has no transform, or one that never
// changes.
func WithTransformVersion(version string) InformerOption {
	return func(c *informerConfig) { c.transformVersion = version }
}

// WithIndexVersion records version as the version of the informer's index
// functions (all of them: WithIndexers', Options.Informer.Indexers' and
// client-go's namespace index) in the file, as
// bolt.ResourceOptions.IndexVersion. Change it whenever an index function
// changes meaning under the same name: a warm start that finds another
// version recorded rebuilds the index entries from the stored objects
// (decoding each once, with a log line) instead of serving the entries the
// old function filed. Default "".
func WithIndexVersion(version string) InformerOption {
	return func(c *informerConfig) { c.indexVersion = version }
}

// WithResyncPeriod sets the informer's resync period, replacing
// Options.Informer.ResyncPeriod.
func WithResyncPeriod(d time.Duration) InformerOption {
	return func(c *informerConfig) { c.resync = &d }
}

// WithDynamicClient makes ForDynamic list and watch through client instead
// of Options.Dynamic (or the client built from Options.RESTConfig): a
// client of the caller's own, as package dynamicinformer's factory passes
// the one it was given. No effect on ForResource, ForMetadata and
// InformerFor, nor on an informer that exists already.
func WithDynamicClient(client dynamic.Interface) InformerOption {
	return func(c *informerConfig) { c.dynamic = client }
}

// WithHotBytes gives the informer's bolt store a hot tier of decoded
// objects of its own with this byte budget (0 disables it) instead of a
// share of the file's (Options.Bolt.HotBytes). No effect on in-memory
// stores.
func WithHotBytes(n int64) InformerOption {
	return func(c *informerConfig) { c.hotBytes = &n }
}

func configOf(indexers cache.Indexers, opts []InformerOption) informerConfig {
	c := informerConfig{indexers: cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}}
	maps.Copy(c.indexers, indexers)
	for _, o := range opts {
		o(&c)
	}
	return c
}
