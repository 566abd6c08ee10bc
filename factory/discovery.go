package factory

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/warmcache/warmcache/informer"
	"github.com/warmcache/warmcache/store/bolt"
)

// DefaultDiscoveryPollInterval is the default DiscoveryOptions.PollInterval.
const DefaultDiscoveryPollInterval = 30 * time.Second

// DiscoveryOptions configures WatchDiscovered.
type DiscoveryOptions struct {
	// Include selects the resources to watch; Exclude removes resources,
	// or objects by namespace, from them, and wins over Include (Argo
	// CD's resource.inclusions and resource.exclusions). Default Include:
	// every resource; default Exclude: none.
	Include, Exclude []ResourceRule
	// Unstructured makes every informer's objects
	// *unstructured.Unstructured, those of built-in kinds included.
	// Default false: typed objects for the kinds Options.Scheme knows
	// (built-in kinds, through Options.RESTConfig), unstructured ones for
	// the others (custom resources, through the factory's dynamic client).
	Unstructured bool
	// PollInterval is how often discovery is read again, in addition to
	// the changes of CustomResourceDefinitions, which are watched so that
	// a new custom resource is watched at once. Default
	// DefaultDiscoveryPollInterval.
	PollInterval time.Duration
	// Handler, if set, is added to every informer before it starts, so
	// it is told each resource's objects from its initial list on. Its
	// events carry objects of every resource: tell them apart by type or
	// by their GroupVersionKind.
	Handler cache.ResourceEventHandler
	// OnAdd, if set, is called with each informer the discovery creates,
	// before it starts (handlers it adds see the initial list), and
	// OnRemove with the resource of each informer it has stopped because
	// its resource is no longer discovered (its data then deleted from
	// the file). Neither is called for an informer stopped by Shutdown.
	// They are never called concurrently (refreshes are serialized), in
	// the order of the changes; they must not block for long, and must
	// not call Refresh.
	OnAdd    func(gvr schema.GroupVersionResource, inf cache.SharedIndexInformer)
	OnRemove func(gvr schema.GroupVersionResource)
	// InformerOptions are applied to every informer the discovery
	// creates (WithIndexers, WithTransform, ...). Default: none.
	InformerOptions []InformerOption
	// Discovery is the discovery client. Default: built from
	// Options.RESTConfig. It is read through an in-memory cache that each
	// refresh invalidates.
	Discovery discovery.DiscoveryInterface
	// CRDs watches CustomResourceDefinitions through the factory's
	// dynamic client to refresh discovery as soon as one changes. Default
	// true when the factory has a dynamic client; false leaves the
	// changes to PollInterval. A watch that fails (forbidden, say) is
	// retried on its backoff, and the polls go on.
	CRDs *bool
}

// Discovered is the set of informers that follows the cluster's
// discovery, returned by Factory.WatchDiscovered: one informer per
// resource that can be listed and watched (not a subresource), in the
// preferred version of its group (or, when that one does not serve it,
// the first of the group's versions in the server's order that does),
// selected by DiscoveryOptions' rules; each in the scope of the whole
// cluster, in the factory's file.
//
// It reads discovery when created, then, once the factory has started,
// every PollInterval and whenever a CustomResourceDefinition changes. A
// resource discovered for the first time gets an informer, started at
// once; a resource no longer discovered has its informer stopped, and its
// data deleted from the file, with a log line each. A group whose
// discovery fails (an aggregated API that is down) is logged and keeps
// the informers and the data it had; the others go on. So does a custom
// resource whose CRD exists, established, while discovery does not serve
// it (an apiserver that is starting), and discovery is read again soon.
// At its first
// refresh after Start it also deletes from the file the data of every
// resource of the cluster's scope it does not watch (a custom resource
// deleted while the controller was stopped, a resource the rules now
// exclude) that no informer of the factory holds: create the factory's
// other informers of that scope before Start, or their data is relisted.
// An informer the factory has already for a selected resource, of the
// cluster's scope and the same kind of objects (the caller's ForResource,
// say), is used as it is, without the rules' namespace filter, and is
// stopped as the discovery's own when its resource goes.
//
// Its methods are safe for concurrent use.
type Discovered struct {
	f      *Factory
	opts   DiscoveryOptions
	rules  resourceRules
	disc   discovery.CachedDiscoveryInterface
	logger klog.Logger
	// kick asks the loop for a refresh (buffered, one pending at most).
	kick chan struct{}

	// refreshMu serializes refreshes: what they read of discovery and
	// what they do to the informers.
	refreshMu sync.Mutex

	// mu guards the fields below. Lock order: refreshMu, then mu or the
	// factory's mu, never both; OnAdd and OnRemove run without either.
	mu        sync.Mutex
	informers map[schema.GroupVersionResource]*discoveredInformer
	// swept is set once the file's resources that are not watched were
	// deleted (the first refresh after Start that has the CRDs listed,
	// or the first after sweepBy, when they cannot be).
	swept   bool
	sweepBy time.Time
	// gone holds the custom resources whose CRD was deleted, until
	// discovery no longer serves them.
	gone map[schema.GroupResource]bool
	// crds is the informer of CustomResourceDefinitions' store and
	// crdsSynced its HasSynced, nil without one.
	crds       cache.Store
	crdsSynced func() bool
	// skipped and failed are what the last refresh logged, to log
	// changes only.
	skipped, failed string

	// ready is set, under the factory's mu, when WatchDiscovered returns
	// d: the factory's Start runs its loop from then on.
	ready bool
}

type discoveredInformer struct {
	name string
	inf  *informer.Informer
	// adopted is set when the factory had the informer before the
	// discovery asked for it (the caller's own).
	adopted bool
	// synced is the Handler's registration's, or the informer's.
	synced func() bool
}

// WatchDiscovered makes f follow the cluster's discovery (see
// Discovered): it reads discovery once, creates an informer for each
// resource opts selects (started by Start, or at once if f has started)
// and returns the set, which from Start on follows discovery until
// Shutdown. A factory follows one discovery: a second call returns
// ErrInvalidOptions. Errors: ErrInvalidOptions for a malformed rule,
// ErrResource without a discovery client, the discovery's error when it
// fails as a whole (a group that fails is logged and skipped),
// informer.ErrStopped once f has shut down.
func (f *Factory) WatchDiscovered(ctx context.Context, opts DiscoveryOptions) (*Discovered, error) {
	rules, err := newResourceRules(opts.Include, opts.Exclude)
	if err != nil {
		return nil, err
	}
	if opts.PollInterval <= 0 {
		opts.PollInterval = DefaultDiscoveryPollInterval
	}
	dc := opts.Discovery
	if dc == nil {
		if f.opts.RESTConfig == nil {
			return nil, fmt.Errorf("%w: discovery: no discovery client (set Options.RESTConfig or DiscoveryOptions.Discovery)", ErrResource)
		}
		c, err := discovery.NewDiscoveryClientForConfig(f.opts.RESTConfig)
		if err != nil {
			return nil, fmt.Errorf("%w: discovery client: %w", ErrResource, err)
		}
		dc = c
	}
	d := &Discovered{
		f: f, opts: opts, rules: rules, disc: memory.NewMemCacheClient(dc),
		logger: f.logger.WithName("discovery"), kick: make(chan struct{}, 1),
		informers: map[schema.GroupVersionResource]*discoveredInformer{},
		gone:      map[schema.GroupResource]bool{},
	}
	f.mu.Lock()
	switch {
	case f.shutdown:
		f.mu.Unlock()
		return nil, fmt.Errorf("discovery: %w", errShutDown)
	case f.discovered != nil:
		f.mu.Unlock()
		return nil, fmt.Errorf("%w: WatchDiscovered was called already on this factory", ErrInvalidOptions)
	}
	f.discovered = d // claimed; its loop waits for ready
	f.mu.Unlock()
	if _, err := d.refresh(ctx); err != nil {
		f.mu.Lock()
		f.discovered = nil
		f.mu.Unlock()
		d.removeAll(ctx)
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	d.ready = true
	f.runDiscoveryLocked()
	return d, nil
}

// runDiscoveryLocked runs the discovery's loop once the factory has
// started and WatchDiscovered has returned it. f.mu must be held.
func (f *Factory) runDiscoveryLocked() {
	d := f.discovered
	if d == nil || !d.ready || f.discoveryRunningLocked() || f.runCtx == nil || f.shutdown {
		return
	}
	ctx, stop := f.runContext(f.runCtx)
	f.discoveryCtx = ctx
	f.wg.Go(func() {
		defer stop()
		d.run(ctx)
		// Its Start's context ended (or Shutdown): the next Start runs
		// the loop again.
		f.mu.Lock()
		defer f.mu.Unlock()
		if f.discoveryCtx == ctx {
			f.discoveryCtx = nil
		}
	})
}

// removeAll removes from the factory the informers a failed
// WatchDiscovered created, keeping their data.
func (d *Discovered) removeAll(ctx context.Context) {
	d.mu.Lock()
	informers := d.informers
	d.informers = map[schema.GroupVersionResource]*discoveredInformer{}
	d.mu.Unlock()
	for _, di := range informers {
		if di.adopted {
			continue
		}
		if _, _, err := d.f.removeInformer(ctx, di.name, false); err != nil {
			d.logger.Error(err, "Cannot remove an informer of a failed WatchDiscovered", "informer", di.name)
		}
	}
}

// Informers returns the current informers by resource.
func (d *Discovered) Informers() map[schema.GroupVersionResource]cache.SharedIndexInformer {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make(map[schema.GroupVersionResource]cache.SharedIndexInformer, len(d.informers))
	for gvr, di := range d.informers {
		out[gvr] = di.inf
	}
	return out
}

// Informer returns the current informer of gvr, if there is one.
func (d *Discovered) Informer(gvr schema.GroupVersionResource) (cache.SharedIndexInformer, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	di, ok := d.informers[gvr]
	if !ok {
		return nil, false
	}
	return di.inf, true
}

// HasSynced reports whether every current informer has synced (and, with
// a Handler, delivered its initial list to it). It can turn false again
// when a refresh adds an informer.
func (d *Discovered) HasSynced() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, di := range d.informers {
		if !di.synced() {
			return false
		}
	}
	return true
}

// WaitForCacheSync waits until HasSynced, or ctx is done, and reports
// HasSynced.
func (d *Discovered) WaitForCacheSync(ctx context.Context) bool {
	err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(context.Context) (bool, error) {
		return d.HasSynced(), nil
	})
	return err == nil
}

// Refresh reads discovery now and starts and stops informers as it
// says, as the poll does.
func (d *Discovered) Refresh(ctx context.Context) error {
	_, err := d.refresh(ctx)
	return err
}

// run refreshes every PollInterval, when kicked (a CRD changed), and
// sooner while a change of a CRD is not yet in discovery, until ctx ends.
func (d *Discovered) run(ctx context.Context) {
	var wg sync.WaitGroup
	defer wg.Wait()
	d.mu.Lock()
	d.sweepBy = time.Now().Add(d.opts.PollInterval)
	d.mu.Unlock()
	if crds := d.crdInformer(); crds != nil {
		wg.Go(func() { crds.RunWithContext(ctx) })
	}
	retry := 0
	for {
		pending, err := d.refresh(ctx)
		if ctx.Err() != nil {
			return
		}
		wait := d.opts.PollInterval
		if err != nil || pending {
			wait = min(wait, 200*time.Millisecond<<min(retry, 8))
			retry++
			if err != nil {
				d.logger.Error(err, "Cannot read discovery; the informers stay as they are", "retryIn", wait)
			}
		} else {
			retry = 0
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-d.kick:
		case <-t.C:
		}
		t.Stop()
	}
}

// wake asks the loop for a refresh.
func (d *Discovered) wake() {
	select {
	case d.kick <- struct{}{}:
	default:
	}
}

// discoveredResource is one resource discovery serves, in its chosen
// version.
type discoveredResource struct {
	gvr        schema.GroupVersionResource
	kind       string
	namespaced bool
}

// refresh reads discovery and makes the informers follow it. pending is
// true when a change of a CRD the CRD watch saw is not in discovery yet.
func (d *Discovered) refresh(ctx context.Context) (pending bool, err error) {
	d.refreshMu.Lock()
	defer d.refreshMu.Unlock()
	d.disc.Invalidate()
	groups, err := d.disc.ServerGroups()
	switch {
	case err != nil:
		return false, fmt.Errorf("discovery: groups: %w", err)
	case groups == nil || len(groups.Groups) == 0:
		// Not a cluster's answer: every cluster serves the core group.
		return false, errors.New("discovery: the server listed no API group")
	}
	lists, err := discovery.ServerPreferredResources(d.disc)
	failed := map[string]bool{} // groups
	var failedErr *discovery.ErrGroupDiscoveryFailed
	switch {
	case errors.As(err, &failedErr):
		for gv := range failedErr.Groups {
			failed[gv.Group] = true
		}
	case err != nil:
		return false, fmt.Errorf("discovery: %w", err)
	}
	d.logFailed(failedErr)

	served := map[schema.GroupResource]bool{}
	want := map[schema.GroupVersionResource]discoveredResource{}
	var skipped []string
	d.mu.Lock()
	gone := maps.Clone(d.gone)
	d.mu.Unlock()
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			d.logger.Error(err, "Skipping a group version discovery returned that does not parse", "groupVersion", l.GroupVersion)
			continue
		}
		for _, r := range l.APIResources {
			if strings.Contains(r.Name, "/") {
				continue // a subresource
			}
			gvr := gv.WithResource(r.Name)
			served[gvr.GroupResource()] = true
			if gone[gvr.GroupResource()] {
				pending = true // discovery still serves a deleted CRD's resource
				continue
			}
			if !slices.Contains(r.Verbs, "list") || !slices.Contains(r.Verbs, "watch") {
				skipped = append(skipped, gvr.String())
				continue
			}
			if !d.rules.watches(gv.Group, r.Kind, r.Namespaced) {
				continue
			}
			want[gvr] = discoveredResource{gvr: gvr, kind: r.Kind, namespaced: r.Namespaced}
		}
	}
	d.logSkipped(skipped)
	pending = d.forgetGone(served) || pending

	wantGR := map[schema.GroupResource]bool{}
	for gvr := range want {
		wantGR[gvr.GroupResource()] = true
	}
	crdServed := d.crdServed()
	d.mu.Lock()
	var remove []schema.GroupVersionResource
	haveGR := map[schema.GroupResource]bool{}
	for gvr := range d.informers {
		haveGR[gvr.GroupResource()] = true
		_, ok := want[gvr]
		switch {
		case ok || failed[gvr.Group]:
			// still discovered, or unknown: kept
		case !wantGR[gvr.GroupResource()] && crdServed[gvr.GroupResource()]:
			// Discovery lacks the resource of a CRD that exists (an
			// apiserver starting serves its CRDs' groups a moment
			// later): kept, and discovery read again soon.
			pending = true
		default:
			remove = append(remove, gvr)
		}
	}
	var add []discoveredResource
	for gvr, r := range want {
		if _, ok := d.informers[gvr]; ok {
			continue
		}
		if failed[gvr.Group] && haveGR[gvr.GroupResource()] {
			// Another version of a group that failed in part: its
			// informer of the version that failed stays.
			continue
		}
		add = append(add, r)
	}
	d.mu.Unlock()
	sort.Slice(remove, func(i, j int) bool { return remove[i].String() < remove[j].String() })
	sort.Slice(add, func(i, j int) bool { return add[i].gvr.String() < add[j].gvr.String() })

	for _, gvr := range remove {
		d.remove(ctx, gvr)
	}
	for _, r := range add {
		if err := d.add(ctx, r); err != nil {
			if ctx.Err() != nil || errors.Is(err, informer.ErrStopped) {
				return false, err
			}
			d.logger.Error(err, "Cannot watch a discovered resource; trying again at the next refresh", "resource", r.gvr.String())
			pending = true
		}
	}
	if !d.sweep(ctx, want, failed, crdServed) {
		pending = true
	}
	return pending || d.crdsPending(served), nil
}

// add creates the informer of r, tells OnAdd and starts it if the
// factory runs.
func (d *Discovered) add(ctx context.Context, r discoveredResource) error {
	f := d.f
	opts := slices.Clone(d.opts.InformerOptions)
	var keep func(string) bool
	if r.namespaced {
		var version string
		keep, version = d.rules.namespaceFilter(r.gvr.Group, r.kind)
		if keep != nil {
			opts = append(opts, func(c *informerConfig) {
				// The rules that select the stored objects are part of
				// what shaped them, as a transform is.
				if c.transformVersion != "" {
					c.transformVersion += "+"
				}
				c.transformVersion += version
			})
		}
	}
	var (
		example runtime.Object
		lw      cache.ListerWatcher
		err     error
	)
	gvk := r.gvr.GroupVersion().WithKind(r.kind)
	if !d.opts.Unstructured && f.opts.RESTConfig != nil && f.opts.Scheme.Recognizes(gvk) {
		if example, err = f.opts.Scheme.New(gvk); err != nil {
			return fmt.Errorf("%w: %s kind %q: %w", ErrResource, r.gvr, r.kind, err)
		}
		if lw, err = typedListWatch(f.opts.RESTConfig, f.opts.Scheme, r.gvr, Scope{}, f.readAhead); err != nil {
			return err
		}
	} else {
		if f.opts.Dynamic == nil {
			return fmt.Errorf("%w: %s: no dynamic client (set RESTConfig or Dynamic)", ErrResource, r.gvr)
		}
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(gvk)
		example, lw = u, DynamicListWatch(f.opts.Dynamic, r.gvr, Scope{})
	}
	if keep != nil {
		lw = namespaceFiltered(lw, keep)
	}
	name := nameOf(r.gvr, Scope{}) + nameSuffix(f.opts.Scheme, example)
	adopted := f.hasInformer(name)
	inf, err := f.InformerFor(ctx, r.gvr, example, lw, Scope{}, nil, opts...)
	if err != nil {
		return err
	}
	di := &discoveredInformer{name: name, inf: inf, synced: inf.HasSynced, adopted: adopted}
	if d.opts.Handler != nil {
		reg, err := inf.AddEventHandler(d.opts.Handler)
		if err != nil {
			return fmt.Errorf("informer %s: add the handler: %w", di.name, err)
		}
		di.synced = func() bool { return inf.HasSynced() && reg.HasSynced() }
	}
	if d.opts.OnAdd != nil {
		d.opts.OnAdd(r.gvr, inf)
	}
	d.mu.Lock()
	d.informers[r.gvr] = di
	d.mu.Unlock()
	f.startInformer(di.name)
	d.logger.Info("Watching a discovered resource", "resource", r.gvr.String(), "kind", r.kind, "informer", di.name)
	return nil
}

// remove stops the informer of gvr, deletes its data from the file and
// tells OnRemove.
func (d *Discovered) remove(ctx context.Context, gvr schema.GroupVersionResource) {
	d.mu.Lock()
	di, ok := d.informers[gvr]
	delete(d.informers, gvr)
	d.mu.Unlock()
	if !ok {
		return
	}
	id, removed, err := d.f.removeInformer(ctx, di.name, true)
	switch {
	case err != nil:
		d.logger.Error(err, "Stopped the informer of a resource no longer discovered, but could not delete all of its data from the cache file", "resource", gvr.String())
	case removed:
		d.logger.Info("Stopped the informer of a resource no longer discovered and deleted its data from the cache file", "resource", gvr.String(), "identity", id.String())
	}
	if removed && d.opts.OnRemove != nil {
		d.opts.OnRemove(gvr)
	}
}

// sweep deletes, at the first refresh after Start, the file's resources
// of the cluster's scope that no informer of the factory holds and that
// are not watched, or are watched by an informer of another identity
// (another kind, when Unstructured changed); except those of groups whose
// discovery failed, those whose informer could not be created, and those
// of CRDs that exist (crdServed) but are missing from discovery. It waits
// for the CRD watch to have listed the CRDs: false when it has not yet,
// so that a later refresh sweeps.
func (d *Discovered) sweep(ctx context.Context, want map[schema.GroupVersionResource]discoveredResource, failed map[string]bool, crdServed map[schema.GroupResource]bool) bool {
	f := d.f
	f.mu.Lock()
	running := f.discoveryRunningLocked()
	f.mu.Unlock()
	d.mu.Lock()
	if d.swept || !running {
		d.mu.Unlock()
		return true
	}
	if d.crdsSynced != nil && !d.crdsSynced() && time.Now().Before(d.sweepBy) {
		d.mu.Unlock()
		return false
	}
	d.swept = true
	d.mu.Unlock()
	if f.db == nil || f.opts.Bolt.ReadOnly {
		return true
	}
	ids, err := f.db.Identities(ctx)
	if err != nil {
		d.logger.Error(err, "Cannot list the cache file's resources to delete those no longer discovered")
		return true
	}
	open := f.openIdentities()
	// The resources with an informer of the cluster's scope open: another
	// identity of theirs in that scope (the other kind when Unstructured
	// changed) is an earlier informer's data.
	wantGR := map[schema.GroupResource]bool{}
	for gvr := range want {
		wantGR[gvr.GroupResource()] = true
	}
	openGVR := map[schema.GroupVersionResource]bool{}
	for _, id := range ids {
		if open[id.String()] && id.Scope == (Scope{}) {
			openGVR[schema.GroupVersionResource{Group: id.Group, Version: id.Version, Resource: id.Resource}] = true
		}
	}
	for _, id := range ids {
		owner := id
		if id.IsSample() {
			owner.Resource = strings.TrimSuffix(owner.Resource, bolt.SampleResourceSuffix)
			owner.Kind = strings.TrimSuffix(owner.Kind, bolt.SampleKindSuffix)
		}
		gvr := schema.GroupVersionResource{Group: owner.Group, Version: owner.Version, Resource: owner.Resource}
		_, wanted := want[gvr]
		if owner.Scope != (Scope{}) || owner.Kind == MetadataKind || open[owner.String()] ||
			(wanted && !openGVR[gvr]) || failed[owner.Group] || (!wantGR[gvr.GroupResource()] && crdServed[gvr.GroupResource()]) {
			continue
		}
		dropped, err := f.db.DropResource(ctx, id, bolt.DropOptions{})
		switch {
		case errors.Is(err, bolt.ErrResourceInUse):
			// an informer created since openIdentities holds it
		case err != nil:
			d.logger.Error(err, "Cannot delete the data of a resource no longer discovered from the cache file", "identity", id.String())
		case dropped && !id.IsSample():
			d.logger.Info("Deleted the data of a resource not discovered or not selected any more from the cache file", "identity", id.String())
		}
	}
	return true
}

// logSkipped logs the resources discovery serves that cannot be listed
// and watched, when they change.
func (d *Discovered) logSkipped(skipped []string) {
	sort.Strings(skipped)
	s := strings.Join(skipped, ",")
	d.mu.Lock()
	changed := s != d.skipped
	d.skipped = s
	d.mu.Unlock()
	if changed && s != "" {
		d.logger.Info("Not watching the discovered resources that cannot be listed and watched", "resources", skipped)
	}
}

// logFailed logs the groups whose discovery failed, when they change.
func (d *Discovered) logFailed(err *discovery.ErrGroupDiscoveryFailed) {
	var gvs []string
	if err != nil {
		for gv := range err.Groups {
			gvs = append(gvs, gv.String())
		}
	}
	sort.Strings(gvs)
	s := strings.Join(gvs, ",")
	d.mu.Lock()
	changed := s != d.failed
	d.failed = s
	d.mu.Unlock()
	if changed && err != nil {
		d.logger.Error(err, "Discovery failed for some groups; their informers and data are kept as they were, and the other groups are followed", "groupVersions", gvs)
	}
}

// namespaceFiltered returns lw keeping only the objects of the
// namespaces keep accepts, in its lists and its watches (bookmarks and
// errors pass).
func namespaceFiltered(lw cache.ListerWatcher, keep func(namespace string) bool) cache.ListerWatcher {
	inner := cache.ToListerWatcherWithContext(lw)
	return &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			list, err := inner.ListWithContext(ctx, o)
			if err != nil {
				return nil, err
			}
			return filterList(list, keep)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			w, err := inner.WatchWithContext(ctx, o)
			if err != nil {
				return nil, err
			}
			return newFilterWatch(w, func(e *watch.Event) bool { return keepEvent(e, keep) }), nil
		},
	}
}
