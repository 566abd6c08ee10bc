package informerbench

import (
	"time"

	"github.com/warmcache/warmcache/benchmarks/internal/measure"
)

// A churn's figures depend on how many of the informer's collections fall
// inside it, and a collection's cost grows with the live heap: client-go's
// informer at 100k pods keeps about 1.5 GB live and allocates about as
// much per 50,000 updates, so a churn of that length holds either no
// collection or one marking the whole heap, and its CPU per update jumps
// by a third from one run to the next. Churn therefore measures whole GC
// periods: from the end of the first collection after the release to the
// end of the last one before the last notification. Each
// implementation then pays for its collections in proportion to what it
// allocates, as a long-running controller does, and the heap's growth
// into fresh pages before its first collection is left out.

// gcSample is the state of the churn at one instant: just after a
// collection ended, or the churn's start or end.
type gcSample struct {
	at       time.Time
	cpu      time.Duration // this process's
	server   time.Duration // the server process's
	serverOK bool
	updates  int // notifications since the churn started
	gc       measure.GC
}

// gcSampleInterval is how often gcSampler looks for the end of a
// collection.
const gcSampleInterval = time.Millisecond

// gcSampler samples a churn at the end of every collection of this
// process.
type gcSampler struct {
	counter *Counter
	srv     Server
	seen    int // the counter's updates before the churn
	loop    *measure.Periodic
	samples []gcSample // at collections' ends, written by loop until it stops
}

func startGCSampler(counter *Counter, srv Server, seen int) *gcSampler {
	s := &gcSampler{counter: counter, srv: srv, seen: seen}
	last := measure.ReadGC().Cycles
	s.loop = measure.Every(gcSampleInterval, func() {
		if c := measure.ReadGC().Cycles; c != last {
			last = c
			s.samples = append(s.samples, s.sample())
		}
	})
	return s
}

func (s *gcSampler) sample() gcSample {
	g := gcSample{at: time.Now(), gc: measure.ReadGC()}
	g.cpu, _ = measure.ProcessCPU()
	var err error
	g.server, err = s.srv.CPU()
	g.serverOK = err == nil
	_, u, _ := s.counter.Counts()
	g.updates = u - s.seen
	return g
}

// stop stops the sampler and returns its samples.
func (s *gcSampler) stop() []gcSample {
	s.loop.Stop()
	return s.samples
}

// steadyWindow returns the first and last of the samples taken at the end
// of collections, and true, when they are two or more and at least min
// notifications apart; otherwise false.
func steadyWindow(samples []gcSample, min int) (from, to gcSample, ok bool) {
	if len(samples) < 2 {
		return from, to, false
	}
	from, to = samples[0], samples[len(samples)-1]
	return from, to, to.updates-from.updates >= min && to.updates > from.updates
}

// eventsBetween returns the figures of the notifications from a to b.
func eventsBetween(a, b gcSample) Events {
	n := b.updates - a.updates
	ev := Events{Measured: n, GC: b.gc.Sub(a.gc)}
	if n <= 0 {
		return ev
	}
	ev.PerSec = measure.PerSecond(n, b.at.Sub(a.at))
	ev.CPU = (b.cpu - a.cpu) / time.Duration(n)
	if a.serverOK && b.serverOK {
		ev.Server = ServerCPU{CPU: b.server - a.server, Known: true}
	}
	return ev
}
