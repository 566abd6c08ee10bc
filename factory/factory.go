package factory

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/warmcache/warmcache/deltafifo"
	"github.com/warmcache/warmcache/factory/internal/watchdecode"
	"github.com/warmcache/warmcache/informer"
	"github.com/warmcache/warmcache/reflector"
	"github.com/warmcache/warmcache/store"
	"github.com/warmcache/warmcache/store/bolt"
	"github.com/warmcache/warmcache/store/codec"
	"github.com/warmcache/warmcache/store/memory"
	"github.com/warmcache/warmcache/store/seal"
)

// Options configures New. The zero value gives a factory of
// in-memory informers that needs a ListerWatcher for each (InformerFor).
type Options struct {
	// Path is the bbolt file that holds every informer's store, one
	// resource per identity (resource and scope). A corrupt or foreign
	// file, or one left unflushed across a restart of the machine
	// (bolt.ErrUnflushed), is moved aside (bolt.MoveAside) and a new one
	// created. Shutdown flushes it (bolt.SyncOnClose). Default "":
	// in-memory stores, nothing survives a restart.
	Path string
	// Bolt configures the file (sync policy, lock timeout, the budget of
	// the hot tier of decoded objects its informers share and its
	// Metrics). Its Logger defaults to Logger. Default: bolt's defaults.
	Bolt bolt.Options
	// RESTConfig builds the clients of ForResource (typed) and
	// ForDynamic (unless Dynamic is set). Default nil: only InformerFor.
	RESTConfig *rest.Config
	// Dynamic is the client of ForDynamic. Default: built from
	// RESTConfig.
	Dynamic dynamic.Interface
	// Scheme knows the typed kinds of ForResource and their codecs.
	// Default: client-go's kubernetes scheme.
	Scheme *runtime.Scheme
	// Informer is the template of every informer's options (resync
	// period, batch size, reflector options, ...); its Store, Name,
	// Metrics and QueueBudget are set by the factory. Default:
	// informer.Options' defaults.
	Informer informer.Options
	// QueueBudget bounds the deltas and listed objects queued in all of
	// the factory's informers together (a deltafifo.Budget shared by
	// their queues), on top of each informer's Informer.QueueCapacity,
	// so that the memory the queues hold does not grow with the number
	// of informers: fifty informers listing at once otherwise hold up to
	// fifty times QueueCapacity decoded objects. An informer's queue
	// holds at most half of it, so one informer whose handler is stuck
	// leaves the other half to the rest, and an empty queue always takes
	// one page (Informer.Reflector.ListPageSize) or event even when the
	// budget is spent, so no informer waits forever for another, and
	// keeps a floor of 64 events (1/64 of a budget under 4,096) so that
	// slow informers holding the budget never cut the others down to one
	// event per store write: the queues hold at most QueueBudget plus one
	// page or the floor per informer. An
	// informer that lists also holds the page it is pushing, whatever the
	// budget: lower Informer.Reflector.ListPageSize when many informers list
	// at once (at 50 informers, 200k objects, no memory limit: 1,065 MiB
	// of peak anonymous memory with pages of 500, 539 MiB with 100; 1,677
	// MiB without a budget). A smaller budget holds less memory during
	// cold starts and relists at the cost of more, smaller store
	// transactions. Default
	// DefaultQueueBudget; negative: no shared budget, each queue is
	// bounded by its QueueCapacity alone.
	QueueBudget int
	// QueueBudgetMetrics receives the use of the queue budget (for
	// example a metrics.Set's ForBudget). Default: no metrics.
	QueueBudgetMetrics deltafifo.BudgetMetrics
	// MemoryBudget, when positive, is the heap in bytes the factory's
	// informers may hold beside their handlers' own: the hot tier, the
	// queues, the relists and replays in flight, the watch streams'
	// read-ahead and the replays' headroom for the collector share it
	// (docs/tuning.md, "One memory budget"). It sets every one of those
	// knobs left at its default (Bolt.HotBytes, Bolt.ReplayHeadroom,
	// QueueBudget, the read-ahead) and gives the informers a
	// reflector.ListGate (Informer.Reflector.ListGate, unless set) that
	// bounds how many relists and replays run at once. Numbers of objects
	// are taken at BudgetObjectBytes each. Each informer's share shows in
	// its metrics: queue depth, hot-tier bytes (package store/bolt/metrics)
	// and whether it holds a list pass (ListGateMetrics). A budget is not
	// a limit on the process: set GOMEMLIMIT (about twice the budget
	// plus the handlers' heap) so the collector keeps the garbage in it.
	// Default 0: each knob at its own default, no gate. At least
	// MinMemoryBudget.
	MemoryBudget int64
	// ListGateMetrics receives the use of the list gate MemoryBudget
	// creates, per informer (for example a metrics.Set's ForListGate).
	// Default: no metrics.
	ListGateMetrics reflector.ListGateMetrics
	// MetricsFor, when set, returns the Metrics of the informer of that
	// name (for example a metrics.Set's For). Default: no metrics.
	MetricsFor func(name string) informer.Metrics
	// Logger receives the factory's log lines. Default: klog.FromContext
	// of New's context.
	Logger *klog.Logger
	// ClusterID identifies the cluster the file caches. It is recorded
	// with every resource in the file, and a resource recorded with
	// another ClusterID is discarded and relisted, with a log line, before
	// any of its objects is served: a file reused after the cluster was
	// recreated at the same address (kind delete/create, a rebuilt CI
	// cluster) or pointed at another cluster is never served stale.
	// Default: the UID of the kube-system namespace
	// (ClusterIdentityNamespace), read with one GET through RESTConfig
	// when New opens the file. When that GET fails (forbidden by RBAC,
	// no RESTConfig) the identity is unknown (""), which New logs; the
	// reflector's check of the stored resourceVersion against the
	// server's (package reflector) still catches a recreated cluster whose
	// resourceVersion is behind the file's. Set it, for example from a
	// name the deployment knows, when the GET is not allowed.
	ClusterID string
	// Keys seals the objects of sensitive resources (Secrets,
	// Sensitive, WithSealing) in the file with AES-256-GCM (package
	// store/seal): the first key seals new writes, every key opens what
	// it sealed. It is read once, by New; an error there, or no valid
	// key, is logged and leaves the factory without keys: sensitive
	// resources are then kept in memory as with nil Keys, and what the
	// file holds of them unsealed is deleted, but sealed data is kept
	// for a later start with the key. Default nil: sensitive resources
	// are not persisted; their informers keep their objects in memory,
	// as client-go's do, with a log line saying so, and whatever the
	// file held for them (plaintext data of an earlier version
	// included) is deleted. The informer of a sensitive resource is not
	// created (ErrResource) when that deletion fails, for example on a
	// read-only file.
	Keys seal.KeyProvider
	// Sensitive lists resources whose objects must not reach the file in
	// plaintext, beyond DefaultSensitive (Secrets), for example
	// {Resource: "configmaps"}. Default: none.
	Sensitive []schema.GroupResource
}

// Factory is warmcache's own informer factory, the one that owns the cache
// file: it makes informers by resource and scope (ForResource, ForDynamic,
// ForMetadata, InformerFor) and is what controller-runtime's cache
// (crcache) and package informers are built on; code written against
// client-go's SharedInformerFactory (f.Core().V1().Pods()) uses
// informers.Factory, which wraps one, instead. It creates informers that
// share one cache file, starts them and shuts them down. One informer
// exists per resource and scope: asking twice returns the same one.
//
// A Factory owns its file and its informers' stores: Shutdown stops the
// informers and closes them. All methods are safe for concurrent use.
type Factory struct {
	opts    Options
	db      *bolt.DB // nil for in-memory stores
	path    string   // the file's absolute path (openFiles); "" without db
	logger  klog.Logger
	cluster string            // recorded with every resource; see Options.ClusterID
	keys    []seal.Key        // of Options.Keys; nil: sensitive resources in memory
	budget  *deltafifo.Budget // of Options.QueueBudget; nil for none
	// readAhead is shared by the factory's clients under
	// Options.MemoryBudget; nil without one.
	readAhead *watchdecode.Budget
	// wrapCodec, set by tests only before any informer exists, wraps the
	// codec of every bolt store.
	wrapCodec func(codec.Codec) codec.Codec

	// mu guards the fields below.
	mu        sync.Mutex
	informers map[string]*factoryEntry
	started   map[string]bool
	// life ends at Shutdown, which stops every run; runCtx is the
	// context of the latest Start, nil before the first (the discovery's
	// loop runs on the Start that finds it ready, on discoveryCtx, set
	// while it runs, and starts the informers it creates on it).
	life         context.Context
	endLife      context.CancelFunc
	runCtx       context.Context
	discoveryCtx context.Context
	// shutdown is set by the first Shutdown, which closes closed once
	// the file is closed.
	shutdown bool
	closed   chan struct{}
	wg       sync.WaitGroup
	// discovered is WatchDiscovered's, nil until it returns
	// (discovery.go); its loop runs while discoveryCtx is set.
	discovered *Discovered
}

type factoryEntry struct {
	inf   *informer.Informer
	store store.Store
	// sample keeps the sample object of a bolt store (sample.go); nil
	// for a memory store.
	sample *sampler
	// id is the identity of the store's resource in the file.
	id bolt.Identity
	// stop ends the informer's run and done is closed when it has
	// ended, once started (startLocked); nil before.
	stop context.CancelFunc
	done chan struct{}
}

// New opens the cache file (when opts.Path is set) and returns a
// factory. A file that is corrupt, not a warmcache file, or left unflushed
// across a restart of the machine is moved aside with a log line and
// replaced by a new one (invariant 5); other open errors (bolt.ErrLocked,
// bolt.ErrReadOnly) are returned, a file another Factory of this process
// holds named as such. The file's directory must exist: New
// does not create it (a missing directory is more often a volume that was
// not mounted than one to create on the container's own disk), and says
// so with an error wrapping fs.ErrNotExist; a path whose directory is not
// one, or a path that is a directory or another file than a regular one,
// is ErrInvalidOptions, and nothing is moved aside. Every error New
// returns starts with "factory: ".
func New(ctx context.Context, opts Options) (*Factory, error) {
	logger := klog.FromContext(ctx)
	if opts.Logger != nil {
		logger = *opts.Logger
	}
	if opts.Scheme == nil {
		opts.Scheme = scheme.Scheme
	}
	if opts.Informer.Store != nil {
		return nil, fmt.Errorf("%w: Options.Informer.Store is set by the factory", ErrInvalidOptions)
	}
	readAhead, err := applyMemoryBudget(&opts)
	if err != nil {
		return nil, err
	}
	if opts.Dynamic == nil && opts.RESTConfig != nil {
		d, err := dynamicClientFor(opts.RESTConfig, readAhead)
		if err != nil {
			return nil, fmt.Errorf("%w: dynamic client: %w", ErrResource, err)
		}
		opts.Dynamic = d
	}
	if opts.QueueBudget == 0 {
		opts.QueueBudget = DefaultQueueBudget
	}
	var budget *deltafifo.Budget
	if opts.QueueBudget > 0 {
		b, err := deltafifo.NewBudget(deltafifo.BudgetOptions{Limit: opts.QueueBudget, Metrics: opts.QueueBudgetMetrics})
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrInvalidOptions, err)
		}
		budget = b
	}
	f := &Factory{opts: opts, logger: logger, budget: budget, readAhead: readAhead, informers: map[string]*factoryEntry{}, started: map[string]bool{}}
	f.life, f.endLife = context.WithCancel(context.Background())
	if opts.Path == "" {
		return f, nil
	}
	if err := checkCacheDir(opts.Path); err != nil {
		return nil, err
	}
	bo := opts.Bolt
	if bo.Logger.GetSink() == nil {
		bo.Logger = logger
	}
	db, err := bolt.Open(ctx, opts.Path, bo)
	if errors.Is(err, bolt.ErrCorrupt) {
		moved, merr := bolt.MoveAside(opts.Path)
		if merr != nil {
			return nil, fmt.Errorf("factory: %w (and moving it aside failed: %w)", err, merr)
		}
		logger.Error(err, "The cache file is unreadable; moved it aside and starting from an empty one", "path", opts.Path, "movedTo", moved)
		db, err = bolt.Open(ctx, opts.Path, bo)
	}
	if errors.Is(err, bolt.ErrLocked) && fileOpenHere(absPath(opts.Path)) {
		return nil, fmt.Errorf("factory: %s is open in another Factory of this process (a file has one writer: share that Factory, or give this one its own Path): %w", opts.Path, err)
	}
	if err != nil {
		return nil, fmt.Errorf("factory: %w", err)
	}
	f.db, f.path = db, absPath(opts.Path)
	fileOpened(f.path)
	f.cluster = clusterID(ctx, opts, logger)
	f.keys = loadKeys(ctx, opts, logger)
	return f, nil
}

// checkCacheDir returns an error naming the directory of path when it
// does not exist or is not a directory, which bolt would report as a
// failure to open its lock file, and an error when path itself exists and
// is not a regular file: bolt reports a directory as a corrupt file, which
// New would move aside, renaming the user's directory.
func checkCacheDir(path string) error {
	if fi, err := os.Stat(path); err == nil && !fi.Mode().IsRegular() {
		what := "not a regular file (" + fi.Mode().Type().String() + ")"
		if fi.IsDir() {
			what = "a directory"
		}
		return fmt.Errorf("%w: Options.Path %s is %s, not a cache file: name the file, for example %s", ErrInvalidOptions, path, what, filepath.Join(path, "cache.db"))
	}
	dir := filepath.Dir(path)
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("factory: cache directory %s does not exist (create it, or mount there the volume meant to hold %s): %w", dir, filepath.Base(path), err)
	case err != nil:
		return fmt.Errorf("factory: cache directory %s: %w", dir, err)
	case !fi.IsDir():
		return fmt.Errorf("%w: cache directory %s of Options.Path %s is not a directory", ErrInvalidOptions, dir, path)
	}
	return nil
}

// DB returns the factory's file, nil for in-memory stores.
func (f *Factory) DB() *bolt.DB { return f.db }

// QueueBudget returns the budget shared by the queues of the factory's
// informers (Options.QueueBudget), nil when there is none.
func (f *Factory) QueueBudget() *deltafifo.Budget { return f.budget }

// InformerFor returns the informer of resource gvr in scope, creating it
// with lw and example (a typed object, or *unstructured.Unstructured) if
// it does not exist. The store's codec is chosen for example (codec.ForObject)
// and the identity recorded in the file is gvr, example's kind and scope,
// with the factory's cluster and WithTransformVersion's version.
// lw must apply scope itself, and must not change the objects of
// TypedListWatch without wire.Forget (see TypedListWatch). With a shard in scope, every list answer of
// lw is checked (ErrShardIgnored when it is not the shard's: see
// Scope.Shard's documentation in the package doc) and relists use
// paginated LIST, never WatchList. The informer has indexers (with
// WithIndexers' and client-go's namespace index) from its creation; an
// existing informer gets the ones it lacks added.
func (f *Factory) InformerFor(ctx context.Context, gvr schema.GroupVersionResource, example runtime.Object, lw cache.ListerWatcher, scope Scope, indexers cache.Indexers, opts ...InformerOption) (*informer.Informer, error) {
	scope, err := scope.Canonical()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidOptions, err)
	}
	cfg := configOf(indexers, opts)
	indexers = cfg.indexers
	if gvr.Version == "" || gvr.Resource == "" {
		return nil, fmt.Errorf("%w: resource %v needs a version and a resource", ErrInvalidOptions, gvr)
	}
	if err := checkShardScope(lw, scope.Shard); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrInvalidOptions, gvr, err)
	}
	name := nameOf(gvr, scope) + nameSuffix(f.opts.Scheme, example)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.shutdown {
		return nil, fmt.Errorf("informer %s: %w", name, errShutDown)
	}
	if e, ok := f.informers[name]; ok {
		if len(indexers) > 0 {
			if err := addMissingIndexers(e.inf, indexers); err != nil {
				return nil, err
			}
		}
		return e.inf, nil
	}
	var infPtr atomic.Pointer[informer.Informer]
	// The store is opened with every index the informer will have, so a
	// warm start finds the index set it recorded and keeps its entries
	// instead of rebuilding them by decoding every object.
	allIndexers := mergeIndexers(f.opts.Informer.Indexers, indexers)
	st, smp, id, err := f.openStore(ctx, gvr, example, scope, allIndexers, cfg, func(err error) {
		if inf := infPtr.Load(); inf != nil {
			inf.ReportCorruption(err)
		}
	})
	if err != nil {
		return nil, fmt.Errorf("informer %s: %w", name, err)
	}
	o := f.opts.Informer
	o.Store, o.Name, o.QueueBudget = st, name, f.budget
	if scope.Shard != "" {
		// Every list answer must be the shard's, and a WatchList stream
		// carries no ShardInfo to check (see shard.go): every relist of a
		// shard is a checked LIST.
		lw = shardChecked(lw, scope.Shard, isMetadata(example))
		o.Reflector.UseWatchList = reflector.WatchListOff
	}
	if o.Logger == nil {
		l := f.logger
		o.Logger = &l
	}
	if f.opts.MetricsFor != nil {
		o.Metrics = f.opts.MetricsFor(name)
	}
	o.Indexers = allIndexers
	if o.Reflector.ListVersions == nil {
		o.Reflector.ListVersions = f.listVersions(gvr, scope)
	}
	if cfg.resync != nil {
		o.ResyncPeriod = *cfg.resync
	}
	inf, err := informer.New(lw, example, o)
	if err == nil && cfg.transform != nil {
		transform := cfg.transform
		if smp != nil {
			transform = smp.wrap(transform)
		}
		err = inf.SetTransform(transform)
	}
	if err != nil {
		_ = st.Close()
		if smp != nil {
			_ = smp.Close()
		}
		return nil, err
	}
	infPtr.Store(inf)
	f.informers[name] = &factoryEntry{inf: inf, store: st, sample: smp, id: id}
	return inf, nil
}

func mergeIndexers(a, b cache.Indexers) cache.Indexers {
	out := cache.Indexers{}
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}

func addMissingIndexers(inf *informer.Informer, indexers cache.Indexers) error {
	have := inf.GetIndexer().GetIndexers()
	missing := cache.Indexers{}
	for k, v := range indexers {
		if _, ok := have[k]; !ok {
			missing[k] = v
		}
	}
	if len(missing) == 0 {
		return nil
	}
	return inf.AddIndexers(missing)
}

// openStore opens the store of one informer: a bolt resource whose
// identity records gvr, the kind and the scope, and whose meta records the
// cluster, the transform version and the index version, or a memory
// store. A sensitive resource (see sensitive) is stored sealed with the
// factory's keys, or, without usable keys, in a memory store, after what
// the file holds of it unsealed is deleted (forgetSensitive).
// cfg.hotBytes, if set, gives the store a hot tier of its own
// (bolt.ResourceOptions.HotBytes). A bolt store comes with the sampler
// that checked its stored objects against cfg's transform and indexers
// (sample.go) and keeps its sample. The identity is the resource's in the
// file (also for a resource kept in memory).
func (f *Factory) openStore(ctx context.Context, gvr schema.GroupVersionResource, example runtime.Object, scope Scope, indexers cache.Indexers, cfg informerConfig, onCorruption func(error)) (store.Store, *sampler, bolt.Identity, error) {
	kind := kindOf(f.opts.Scheme, example)
	id := bolt.Identity{Group: gvr.Group, Version: gvr.Version, Resource: gvr.Resource, Kind: kind, Scope: scope}
	st, smp, err := f.openStoreOf(ctx, id, example, indexers, cfg, onCorruption)
	return st, smp, id, err
}

// openStoreOf is openStore of the resource id.
func (f *Factory) openStoreOf(ctx context.Context, id bolt.Identity, example runtime.Object, indexers cache.Indexers, cfg informerConfig, onCorruption func(error)) (store.Store, *sampler, error) {
	if f.db == nil {
		st, err := memory.New(memory.Options{Indexers: indexers})
		return st, nil, err
	}
	c, err := codecFor(f.opts.Scheme, example)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %w", ErrResource, err)
	}
	if f.wrapCodec != nil {
		c = f.wrapCodec(c)
	}
	gvr := schema.GroupVersionResource{Group: id.Group, Version: id.Version, Resource: id.Resource}
	scope := id.Scope
	sensitive := f.sensitive(gvr.GroupResource(), cfg.sealing)
	if id.Kind == UnstructuredKind {
		if err := f.dropKindless(ctx, id, sensitive); err != nil {
			return nil, nil, err
		}
	}
	if sensitive {
		sc, ok, err := f.sealedCodec(c)
		if err != nil {
			return nil, nil, err
		}
		if !ok {
			hint := "Set factory.Options.Keys (for example seal.FromFile of a mounted Secret) to persist it encrypted"
			if f.opts.Keys != nil {
				hint = "factory.Options.Keys is set but gave no usable key (see the error logged when the factory was created); fix it to persist it encrypted"
			}
			f.logger.Info("Not persisting a sensitive resource without an encryption key: its objects are kept in memory only and relisted at every start. "+hint,
				"resource", gvr.String(), "scope", scope)
			if err := f.forgetSensitive(ctx, id); err != nil {
				return nil, nil, err
			}
			st, err := memory.New(memory.Options{Indexers: indexers})
			return st, nil, err
		}
		c = sc
	}
	ro := bolt.ResourceOptions{
		Identity:         id,
		Codec:            c,
		Indexers:         indexers,
		OnCorruption:     onCorruption,
		Cluster:          f.cluster,
		TransformVersion: cfg.transformVersion,
		IndexVersion:     cfg.indexVersion,
		HotBytes:         cfg.hotBytes,
	}
	smp, err := f.openSampler(ctx, ro, example, cfg.transform)
	if err != nil {
		return nil, nil, err
	}
	st, err := f.db.Resource(ctx, ro)
	if err != nil {
		if smp != nil {
			_ = smp.Close()
		}
		return nil, nil, err
	}
	if smp != nil {
		smp.takeFrom(ctx, st)
	}
	return st, smp, nil
}

// dropKindless deletes the record an unstructured informer of id's
// built-in kind left before ForDynamic named its example's kind: the same
// resource and scope without a kind. Nothing reads it any more; for a
// sensitive resource it may hold plaintext, which must go (forgetSensitive:
// an error then fails the informer); for any other it is only logged.
func (f *Factory) dropKindless(ctx context.Context, id bolt.Identity, sensitive bool) error {
	old := id
	old.Kind = ""
	if sensitive {
		return f.forgetSensitive(ctx, old)
	}
	if dropped, err := f.db.DropResource(ctx, old, bolt.DropOptions{}); err != nil {
		f.logger.Error(err, "Cannot delete the record of an unstructured informer of a built-in kind left by an earlier version", "resource", old.String())
	} else if dropped {
		f.logger.Info("Deleted the record of an unstructured informer of a built-in kind left by an earlier version, which recorded no kind", "resource", old.String())
	}
	return nil
}

// ForResource returns the informer of the typed resource gvr, whose
// objects are of kind (for example "Pod" for pods; the Go type comes from
// Scheme), listed and watched through a REST client built from
// RESTConfig. An empty kind is guessed from the kinds Scheme registers for
// gvr's group version (the one whose lowercase plural is gvr.Resource).
// Asking again for the same resource, kind and scope returns the same
// informer (see InformerFor); one created after Start runs from the next
// Start. The error wraps ErrResource for a kind Scheme does not know or a
// factory without RESTConfig, ErrInvalidOptions for a scope whose selectors
// do not parse, and informer.ErrStopped once the factory has shut down.
func (f *Factory) ForResource(ctx context.Context, gvr schema.GroupVersionResource, kind string, scope Scope, opts ...InformerOption) (*informer.Informer, error) {
	if kind == "" {
		kind = f.schemeKind(gvr)
	}
	example, err := f.opts.Scheme.New(gvr.GroupVersion().WithKind(kind))
	if err != nil {
		return nil, fmt.Errorf("%w: %s kind %q: %w", ErrResource, gvr, kind, err)
	}
	scope, err = scope.Canonical()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidOptions, err)
	}
	lw, err := typedListWatch(f.opts.RESTConfig, f.opts.Scheme, gvr, scope, f.readAhead)
	if err != nil {
		return nil, err
	}
	return f.InformerFor(ctx, gvr, example, lw, scope, nil, opts...)
}

// ForDynamic returns the informer of gvr's objects as
// *unstructured.Unstructured (custom resources), stored with
// codec.Unstructured, listed and watched through Options.Dynamic (or
// WithDynamicClient's client). For a resource whose kind Scheme knows, it
// is an informer apart from ForResource's of the same scope, with a store
// of its own.
func (f *Factory) ForDynamic(ctx context.Context, gvr schema.GroupVersionResource, scope Scope, opts ...InformerOption) (*informer.Informer, error) {
	client := configOf(nil, opts).dynamic
	if client == nil {
		client = f.opts.Dynamic
	}
	if client == nil {
		return nil, fmt.Errorf("%w: %s: no dynamic client (set RESTConfig or Dynamic)", ErrResource, gvr)
	}
	scope, err := scope.Canonical()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidOptions, err)
	}
	example := &unstructured.Unstructured{}
	if kind := f.schemeKind(gvr); kind != "" {
		// A kind Scheme knows has a typed informer too: the example's kind
		// names this one apart ("... unstructured") and gives it a store
		// of its own.
		example.SetGroupVersionKind(gvr.GroupVersion().WithKind(kind))
	}
	return f.InformerFor(ctx, gvr, example, DynamicListWatch(client, gvr, scope), scope, nil, opts...)
}

// schemeKind returns the kind Scheme registers for gvr (the one whose
// lowercase plural is gvr.Resource), or "".
func (f *Factory) schemeKind(gvr schema.GroupVersionResource) string {
	for k := range f.opts.Scheme.KnownTypes(gvr.GroupVersion()) {
		if plural, _ := meta.UnsafeGuessKindToResource(gvr.GroupVersion().WithKind(k)); plural == gvr {
			return k
		}
	}
	return ""
}

// restClientFor builds a REST client for gv with s's codecs, as
// client-go's generated clients do, whose watches are decoded on every
// core (factory/internal/watchdecode) and whose protobuf decoders
// remember each object's message (wireSerializer).
func restClientFor(config *rest.Config, s *runtime.Scheme, gv schema.GroupVersion, readAhead *watchdecode.Budget) (*rest.RESTClient, error) {
	if s == nil {
		s = scheme.Scheme
	}
	c := rest.CopyConfig(config)
	c.GroupVersion = &gv
	c.APIPath = "/apis"
	if gv.Group == "" {
		c.APIPath = "/api"
	}
	c.NegotiatedSerializer = watchdecode.WrapBudget(wireSerializer{rest.CodecFactoryForGeneratedClient(s, serializer.NewCodecFactory(s)).WithoutConversion(), s}, readAhead)
	if c.UserAgent == "" {
		c.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	return rest.RESTClientFor(c)
}
