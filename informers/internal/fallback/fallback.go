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
