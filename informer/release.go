package informer

import (
	"context"
	"sync"

	"github.com/warmcache/warmcache/internal/memrelease"
)

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
// goroutine of the informer's own, which the informer's stop ends.
type processReleaser struct {
	ctx context.Context
	wg  *sync.WaitGroup
}

func (r processReleaser) Begin() { memrelease.Begin() }

func (r processReleaser) End(ask bool) {
	memrelease.End()
	if ask {
		t := memrelease.Ask()
		r.wg.Go(func() { memrelease.After(r.ctx, t) })
	}
}
