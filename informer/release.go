package informer

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/warmcache/warmcache/internal/memrelease"
)

// EnvKeepListMemory is the environment variable that sets
// Options.KeepListMemory for every informer of the process: any value
// strconv.ParseBool reads as true.
const EnvKeepListMemory = "WARMCACHE_KEEP_LIST_MEMORY"

// releaseAfterListed is the number of objects from which a relist, a
// replay or a start asks for its memory to be returned (KeepListMemory):
// a few MB of garbage at least, worth a collection.
const releaseAfterListed = 1000

// releaser is told of the informer's bursts of allocation: its start until
// it synced, each relist and each replay, from their begin to their end,
// and whether the end asks for their memory to be returned.
type releaser interface {
	Begin()
	End(ask bool)
}

// processReleaser counts the informer's bursts with the process's
// (package memrelease) and waits for the release each end asks for on a
// goroutine of the informer's own, which stop ends; one goroutine for the
// ticket it waits for (a cold start's relist and start ask for the same).
// newProcessReleaser makes it.
type processReleaser struct {
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	// waiting is the ticket waited for, plus one; zero if none.
	waiting atomic.Uint64
}

func newProcessReleaser() *processReleaser {
	r := &processReleaser{}
	r.ctx, r.cancel = context.WithCancel(context.Background())
	return r
}

func (r *processReleaser) Begin() { memrelease.Begin() }

func (r *processReleaser) End(ask bool) {
	memrelease.End()
	if !ask {
		return
	}
	t := memrelease.Ask()
	w := uint64(t) + 1
	if r.waiting.Swap(w) == w {
		return
	}
	r.wg.Go(func() {
		memrelease.After(r.ctx, t)
		r.waiting.CompareAndSwap(w, 0)
	})
}

// stop ends the waits, and waits for them: after the informer's last End.
func (r *processReleaser) stop() {
	r.cancel()
	r.wg.Wait()
}

// endBurst tells the releaser that a burst of objects decoded is over:
// one of releaseAfterListed objects or more asks for its memory to be
// returned, unless KeepListMemory.
func (i *Informer) endBurst(objects int) {
	i.releaser.End(objects >= releaseAfterListed && !i.opts.KeepListMemory)
}
