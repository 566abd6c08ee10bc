package measure

import (
	"sync"
	"time"
)

// Periodic is a goroutine that calls a function at a fixed interval, the
// loop of every sampler of the benchmarks. Its methods are safe for
// concurrent use.
type Periodic struct {
	stop chan struct{}
	done chan struct{}
	once sync.Once
}

// Every calls fn every interval, in a goroutine of its own, until Stop.
// The first call is one interval after Every returns.
func Every(interval time.Duration, fn func()) *Periodic {
	p := &Periodic{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(p.done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-p.stop:
				return
			case <-t.C:
				fn()
			}
		}
	}()
	return p
}

// Stop ends the calls and waits until the last one has returned. It
// reports whether this call stopped them; later calls return false at
// once.
func (p *Periodic) Stop() bool {
	first := false
	p.once.Do(func() {
		first = true
		close(p.stop)
	})
	<-p.done
	return first
}
