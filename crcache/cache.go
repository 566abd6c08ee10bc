package crcache

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/warmcache/warmcache/factory"
)

// Options configures NewCache.
type Options struct {
	// Factory configures the factory that holds the cache file; its Path
	// is required. Its Scheme and RESTConfig default to the manager's
	// (cache.Options.Scheme and the rest.Config NewCache's function is
	// given). Default Logger: klog's global logger.
	Factory factory.Options
	// TransformVersion names the transforms of the cache options
	// (DefaultTransform, ByObject's and the per-namespace configs'
	// Transform), recorded with every informer in the file
	// (factory.WithTransformVersion). The file stores transformed
	// objects and cannot see a transform's code: change TransformVersion
	// whenever a transform changes what it keeps or how it rewrites
	// objects (adding or removing one included), so that the warm start
	// relists instead of serving objects shaped by the old transform. (A
	// change that shows on the informer's sample object is found without
	// it: see package factory's WithTransform.) Default "": no transform,
	// or transforms that never change.
	TransformVersion string
}

// NewCache returns a cache.NewCacheFunc for ctrl.Options.NewCache (or
// cluster.Options.NewCache): the manager's cache is controller-runtime's
// own (cache.New with the manager's cache.Options), with every informer
// kept in opts.Factory.Path instead of the heap, each under the identity
// of what it lists (resource, kind or metadata-only, namespace, label and
// field selectors), and List pushed down to the stores (Cache.List).
//
// Supported cache.Options: DefaultNamespaces (one informer per namespace
// and kind, each its own scope in the file), DefaultLabelSelector,
// DefaultFieldSelector, DefaultTransform, ByObject (selectors, transforms,
// namespaces, per-namespace configs), SyncPeriod, unstructured and
// metadata-only (*metav1.PartialObjectMetadata) objects. Unsupported, an
// error wrapping ErrUnsupported from the returned function: NewInformer
// (crcache sets it) and the all-namespaces key "" in DefaultNamespaces or
// ByObject.Namespaces. No informer of the cache is ever silently
// in-memory: one whose store cannot be opened fails the GetInformer, Get
// or List that creates it.
func NewCache(opts Options) cache.NewCacheFunc {
	return func(config *rest.Config, o cache.Options) (cache.Cache, error) {
		return newCache(config, o, opts)
	}
}

// Cache is the cache NewCache's function returns: controller-runtime's
// informer cache (every method but List and RemoveInformer is its own),
// whose informers are persistent. It owns the cache file: Start closes it
// when it returns, after every informer has stopped. Safe for concurrent
// use.
type Cache struct {
	cache.Cache
	opts     cache.Options // defaulted and tagged
	f        *factory.Factory
	registry *registry
	runs     *runs
	started  atomic.Bool
}

var _ cache.Cache = (*Cache)(nil)

func newCache(config *rest.Config, o cache.Options, opts Options) (*Cache, error) {
	if opts.Factory.Path == "" {
		return nil, fmt.Errorf("%w: crcache.Options.Factory.Path is required", factory.ErrInvalidOptions)
	}
	if o.Scheme == nil {
		o.Scheme = scheme.Scheme
	}
	if o.HTTPClient == nil {
		hc, err := rest.HTTPClientFor(config)
		if err != nil {
			return nil, fmt.Errorf("crcache: HTTP client: %w", err)
		}
		o.HTTPClient = hc
	}
	if o.Mapper == nil {
		m, err := apiutil.NewDynamicRESTMapper(config, o.HTTPClient)
		if err != nil {
			return nil, fmt.Errorf("crcache: REST mapper: %w", err)
		}
		o.Mapper = m
	}
	o, err := tagOptions(o)
	if err != nil {
		return nil, err
	}
	fo := opts.Factory
	if fo.Scheme == nil {
		fo.Scheme = o.Scheme
	}
	if fo.RESTConfig == nil {
		fo.RESTConfig = config
	}
	ctx := context.Background()
	if fo.Logger != nil {
		ctx = klog.NewContext(ctx, *fo.Logger)
	}
	f, err := factory.New(ctx, fo)
	if err != nil {
		return nil, fmt.Errorf("crcache: %w", err)
	}
	c := &Cache{opts: o, f: f, registry: &registry{}, runs: newRuns()}
	h := &hook{ctx: ctx, f: f, scheme: o.Scheme, registry: c.registry, runs: c.runs, transformVersion: opts.TransformVersion}
	o.NewInformer = h.newInformer
	inner, err := cache.New(config, o)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("crcache: %w", err), f.Shutdown())
	}
	c.Cache = inner
	return c, nil
}

// Start runs the informers until ctx is done (cache.Cache's Start), then
// waits for them to stop and closes the cache file.
// A second Start returns an error and leaves the running cache alone.
func (c *Cache) Start(ctx context.Context) error {
	if !c.started.CompareAndSwap(false, true) {
		return errors.New("crcache: the cache was already started")
	}
	err := c.Cache.Start(ctx)
	c.runs.close()
	return errors.Join(err, c.f.Shutdown())
}

// RemoveInformer is not supported: the persistent informer of a kind
// keeps its identity in the file for the life of the cache. It returns an
// error wrapping ErrUnsupported.
func (c *Cache) RemoveInformer(_ context.Context, obj client.Object) error {
	return fmt.Errorf("%w: RemoveInformer(%T)", ErrUnsupported, obj)
}

// NeedLeaderElection reports false: the cache runs on every replica, as
// controller-runtime's does.
func (c *Cache) NeedLeaderElection() bool { return false }
