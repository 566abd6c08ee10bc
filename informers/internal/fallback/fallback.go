// Package fallback runs the informers that the factories of package
// informers and informers/dynamicinformer could not give a persistent
// cache: client-go's in-memory informers, which the factory.Factory does
// not run, each on a goroutine of its own until its context ends or Stop
// is called.
package fallback

import (
	"context"
	"sync"

	"k8s.io/client-go/tools/cache"
)

// Runner runs informers and stops them together. The zero value is ready
// to use; its methods are safe for concurrent use.
type Runner struct {
	mu      sync.Mutex
	cancels []context.CancelFunc
	wg      sync.WaitGroup
}

// Run runs inf until ctx is done or Stop is called.
func (r *Runner) Run(ctx context.Context, inf cache.SharedIndexInformer) {
	runCtx, cancel := context.WithCancel(ctx)
	r.mu.Lock()
	r.cancels = append(r.cancels, cancel)
	r.mu.Unlock()
	r.wg.Go(func() { inf.RunWithContext(runCtx) })
}

// Stop stops every informer Run started and waits for them to return.
func (r *Runner) Stop() {
	r.mu.Lock()
	cancels := r.cancels
	r.cancels = nil
	r.mu.Unlock()
	for _, cancel := range cancels {
		cancel()
	}
	r.wg.Wait()
}

// Starts is a factory's record of which of its informers, by key K (a Go
// type, a resource), were started, with the Runner of those that are
// fallbacks; the factory.Factory runs the others. The factory's lock
// guards it, except Close and Stop.
type Starts[K comparable] struct {
	Runner
	started  map[K]bool
	shutdown bool
}

// Start calls startAll (the factory.Factory's Start) and marks every
// informer of infs not started yet as started, running on ctx those that
// isFallback says are client-go's. After Shutdown it does nothing, nor
// when startAll reports that the factory.Factory has shut down (it was
// shut down directly): as client-go's factory after Shutdown, it starts
// nothing, so WaitForCacheSync waits for none of them.
func (s *Starts[K]) Start(ctx context.Context, startAll func(context.Context) bool, infs map[K]cache.SharedIndexInformer, isFallback func(K) bool) {
	if s.shutdown || !startAll(ctx) {
		return
	}
	if s.started == nil {
		s.started = map[K]bool{}
	}
	for k, inf := range infs {
		if s.started[k] {
			continue
		}
		s.started[k] = true
		if isFallback(k) {
			s.Run(ctx, inf)
		}
	}
}

// Started reports whether the informer of k was started.
func (s *Starts[K]) Started(k K) bool { return s.started[k] }

// Close makes Start do nothing from now on (under lock, the factory's),
// then stops the fallbacks and waits for them, without lock.
func (s *Starts[K]) Close(lock sync.Locker) {
	lock.Lock()
	s.shutdown = true
	lock.Unlock()
	s.Stop()
}
