package factory

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"k8s.io/client-go/tools/cache"

	"github.com/warmcache/warmcache/informer"
	"github.com/warmcache/warmcache/store/bolt"
)

// Start runs every informer not yet started, each on its own goroutine,
// until ctx is done or Shutdown, as client-go's factory does: informers
// created later are started by a later Start, on that Start's context. An
// informer runs once: after its context ends it stays stopped, and a
// later Start does not run it again.
func (f *Factory) Start(ctx context.Context) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.shutdown {
		return
	}
	f.runCtx = ctx
	for name, e := range f.informers {
		f.startLocked(ctx, name, e)
	}
	f.runDiscoveryLocked()
}

// runContext returns a context of ctx that Shutdown also ends, and its
// cancel function.
func (f *Factory) runContext(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	unregister := context.AfterFunc(f.life, cancel)
	return ctx, func() { unregister(); cancel() }
}

// startLocked runs the informer of e, named name, on a goroutine of its
// own until ctx ends, Shutdown or removeInformer stops it, unless it runs
// already or the factory has shut down. f.mu must be held.
func (f *Factory) startLocked(ctx context.Context, name string, e *factoryEntry) {
	if f.started[name] || f.shutdown {
		return
	}
	f.started[name] = true
	ctx, stop := f.runContext(ctx)
	e.stop, e.done = stop, make(chan struct{})
	inf, done := e.inf, e.done
	f.wg.Go(func() {
		defer close(done)
		defer stop()
		inf.RunWithContext(ctx)
	})
}

// startInformer starts the informer of that name, which discovery
// created, once the factory has started: on the context of the
// discovery's loop if it runs, else of the latest Start (WatchDiscovered
// called after Start creates its first informers before its loop runs).
// Before the first Start, or once that context has ended, the next Start
// starts it.
func (f *Factory) startInformer(name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	ctx := f.discoveryCtx
	if ctx == nil {
		ctx = f.runCtx
	}
	if e, ok := f.informers[name]; ok && ctx != nil && ctx.Err() == nil {
		f.startLocked(ctx, name, e)
	}
}

// removeInformer stops the informer of that name, waits for its run to
// end, closes its store and takes it out of the factory, so that asking
// for it again creates a new one. With drop, the data the file holds of
// its resource (and its sample) is then deleted. The informer stays
// stopped: AddEventHandler returns informer.ErrStopped. It returns the
// identity of the removed resource, and false if the factory has no
// informer of that name or has shut down (which stops them all).
func (f *Factory) removeInformer(ctx context.Context, name string, drop bool) (bolt.Identity, bool, error) {
	f.mu.Lock()
	e, ok := f.informers[name]
	if !ok || f.shutdown {
		f.mu.Unlock()
		return bolt.Identity{}, false, nil
	}
	delete(f.informers, name)
	started := f.started[name]
	delete(f.started, name)
	// Shutdown waits for the removal before it closes the file.
	f.wg.Add(1)
	defer f.wg.Done()
	f.mu.Unlock()
	if started {
		e.stop()
		<-e.done
	} else {
		// An informer never run stops at once on a done context.
		done, cancel := context.WithCancel(context.Background())
		cancel()
		e.inf.RunWithContext(done)
	}
	var errs []error
	if e.sample != nil {
		if !drop {
			e.sample.takeFrom(ctx, e.store) // as Shutdown does
		}
		errs = append(errs, e.sample.Close())
	}
	errs = append(errs, e.store.Close())
	if drop && f.db != nil && !f.opts.Bolt.ReadOnly {
		for _, id := range []bolt.Identity{e.id, sampleIdentity(e.id)} {
			if _, err := f.db.DropResource(ctx, id, bolt.DropOptions{}); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return e.id, true, fmt.Errorf("informer %s: remove: %w", name, err)
	}
	return e.id, true, nil
}

// hasInformer reports whether the factory has an informer of that name.
func (f *Factory) hasInformer(name string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, ok := f.informers[name]
	return ok
}

// openIdentities returns the identities of the resources the factory's
// informers hold open, by bucket name.
func (f *Factory) openIdentities() map[string]bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make(map[string]bool, len(f.informers))
	for _, e := range f.informers {
		out[e.id.String()] = true
	}
	return out
}

// WaitForCacheSync waits until every started informer has synced, or ctx
// is done. It returns each informer's state by name.
func (f *Factory) WaitForCacheSync(ctx context.Context) map[string]bool {
	f.mu.Lock()
	var names []string
	checkers := map[string]cache.DoneChecker{}
	for name, e := range f.informers {
		if f.started[name] {
			names = append(names, name)
			checkers[name] = e.inf.HasSyncedChecker()
		}
	}
	f.mu.Unlock()
	sort.Strings(names)
	out := map[string]bool{}
	for _, name := range names {
		out[name] = cache.WaitFor(ctx, "", checkers[name])
	}
	return out
}

// Err returns ErrShutdown (which also matches informer.ErrStopped) once
// Shutdown has been called, and nil before: from then on Start starts
// nothing and no informer can be created.
func (f *Factory) Err() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.shutdown {
		return errShutDown
	}
	return nil
}

// errShutDown is the error of a factory that has shut down, wrapped by
// what it refuses: ErrShutdown, which also matches informer.ErrStopped.
var errShutDown = fmt.Errorf("%w (%w)", ErrShutdown, informer.ErrStopped)

// discoveryRunningLocked reports whether the discovery's loop runs: its
// context is set while it runs, and one that ended is on its way out.
// f.mu must be held.
func (f *Factory) discoveryRunningLocked() bool {
	return f.discoveryCtx != nil && f.discoveryCtx.Err() == nil
}

// Shutdown stops every informer, waits for them, then closes their stores
// and the file. Informers cannot be created afterwards. It is idempotent:
// a later or concurrent call waits until the first has closed the file,
// and returns nil.
func (f *Factory) Shutdown() error {
	f.mu.Lock()
	if f.shutdown {
		closed := f.closed
		f.mu.Unlock()
		<-closed
		return nil
	}
	f.shutdown = true
	f.closed = make(chan struct{})
	defer close(f.closed)
	f.endLife()
	entries := f.informers
	var idle []*informer.Informer
	for name, e := range entries {
		if !f.started[name] {
			idle = append(idle, e.inf)
		}
	}
	f.mu.Unlock()
	// An informer never run stops at once on a done context: it ends
	// stopped (AddEventHandler returns ErrStopped), as a run one does.
	done, cancel := context.WithCancel(context.Background())
	cancel()
	for _, inf := range idle {
		inf.RunWithContext(done)
	}
	f.wg.Wait()
	var errs []error
	for _, e := range entries {
		if e.sample != nil {
			e.sample.takeFrom(context.Background(), e.store)
			errs = append(errs, e.sample.Close())
		}
		if err := e.store.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	if f.db != nil {
		errs = append(errs, f.db.Close())
		fileClosed(f.path)
	}
	return errors.Join(errs...)
}
