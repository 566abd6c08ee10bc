package informerbench

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/warmcache/warmcache/benchmarks/internal/apiproc"
	"github.com/warmcache/warmcache/benchmarks/internal/measure"
)

// Relisted is what Relist measured.
type Relisted struct {
	// Percent is the share of the pods the server changed during the
	// outage, Changed their number.
	Percent, Changed int
	// Duration runs from the restarted server's release of the watch
	// streams (Server.Open after Server.Restart) to the handler having
	// been told of every change and of a marker update made after the
	// relist's list began (so that every notification of the relist was
	// delivered). It includes the reflector's wait before relisting: none
	// for a first 410, but a 410 less than two minutes after the previous
	// relist backs off (800ms, doubling), in client-go's reflector as in
	// warmcache's, so relists in a row take longer each.
	Duration time.Duration
	// Listed runs from the server having begun the relist's list or
	// WatchList (seen within relistPoll) to the same end: the relist's
	// own cost, without the reflector's reconnection and backoff.
	Listed time.Duration
	// CPU is the CPU time this process used during Duration.
	CPU  time.Duration
	Heap Heap
	// Updates is the number of update notifications of the relist, the
	// marker's excluded. client-go notifies every listed object (its
	// handlers registered without a resync period still count as
	// resyncing), warmcache the changed ones only.
	Updates int
}

// relistPoll is how often Relist reads the server's counters while it
// waits for the informer's list to begin.
const relistPoll = 5 * time.Millisecond

// Relist forces a 410 relist of the running informer inf (which has a
// handler) with percent of the server's n pods changed: the server updates
// them (generation gen) while the watch streams are held back, then
// restarts (every watch ends and the history is compacted) and releases
// the streams. The informer's watch resumes from a compacted
// resourceVersion, gets 410 Expired and relists; its handler is told of
// the changed pods only. Once the relist's list has begun, the server
// updates a marker pod; the phase ends when the handler has seen the
// marker, which comes after every notification of the relist.
func Relist(ctx context.Context, proc Server, inf *Informer, n, percent, gen int) (Relisted, error) {
	r := Relisted{Percent: percent, Changed: n * percent / 100}
	if inf.Counter == nil || n <= 0 || percent < 0 || percent > 100 || gen <= 0 {
		return r, fmt.Errorf("%w: relist of %d%% of %d pods, generation %d, on an informer with a handler", ErrInvalidArgument, percent, n, gen)
	}
	_, seen, _ := inf.Counter.Counts()
	marked := inf.Counter.Mark(isGeneration(gen + 1))
	if r.Changed > 0 {
		if _, err := proc.Churn(ctx, r.Changed, gen, 0); err != nil {
			return r, errors.Join(err, proc.Open(ctx))
		}
	}
	before, err := proc.Stats(ctx)
	if err != nil {
		return r, errors.Join(err, proc.Open(ctx))
	}
	base := measure.SettledHeap()
	peak := measure.StartPeak(0)
	defer peak.Stop()
	// The timer starts once the restarted server serves: a real
	// kube-apiserver takes seconds to start and fill its watch cache,
	// which would hide what the informers cost.
	if err := proc.Restart(ctx); err != nil {
		return r, errors.Join(err, proc.Open(ctx))
	}
	var sw measure.Stopwatch
	sw.StartTimer()
	if err := proc.Open(ctx); err != nil {
		return r, err
	}
	if err := WaitList(ctx, listsOf(proc), before.Lists+before.WatchLists); err != nil {
		return r, fmt.Errorf("informerbench: %s: %w", inf.Name, err)
	}
	listed := time.Now()
	// The list's snapshot is taken: the marker's update comes after it,
	// through the watch, after every notification of the relist.
	if _, err := proc.Churn(ctx, 1, gen+1, 0); err != nil {
		return r, errors.Join(err, proc.Open(ctx))
	}
	if err := proc.Open(ctx); err != nil {
		return r, err
	}
	select {
	case <-marked:
	case <-ctx.Done():
		return r, fmt.Errorf("informerbench: %s: waiting for the marker after a relist: %w", inf.Name, ctx.Err())
	}
	sw.StopTimer()
	r.Duration, r.Listed, r.CPU = sw.Elapsed(), time.Since(listed), sw.CPU()
	r.Heap.Peak = above(peak.Stop(), base)
	r.Heap.Settled = above(measure.SettledHeap(), base)
	_, updates, _ := inf.Counter.Counts()
	r.Updates = updates - seen - 1
	if r.Updates < r.Changed || (inf.Name != ClientGo && r.Updates != r.Changed) {
		return r, fmt.Errorf("informerbench: %s: relist of %d changed pods notified %d updates", inf.Name, r.Changed, r.Updates)
	}
	return r, nil
}

// isGeneration returns a predicate true for objects annotated with
// generation gen.
func isGeneration(gen int) func(obj interface{}) bool {
	want := strconv.Itoa(gen)
	return func(obj interface{}) bool {
		m, err := meta.Accessor(obj)
		return err == nil && m.GetAnnotations()[apiproc.GenerationAnnotation] == want
	}
}

// WaitList waits until the server has begun a list or a WatchList since
// it counted before of them: until lists, which reads the server's count
// of lists plus WatchLists, exceeds before. It polls every 5ms.
func WaitList(ctx context.Context, lists func(context.Context) (int, error), before int) error {
	t := time.NewTicker(relistPoll)
	defer t.Stop()
	for {
		n, err := lists(ctx)
		if err != nil {
			return err
		}
		if n > before {
			return nil
		}
		select {
		case <-t.C:
		case <-ctx.Done():
			return fmt.Errorf("waiting for the relist: %w", ctx.Err())
		}
	}
}

// listsOf returns proc's count of lists plus WatchLists.
func listsOf(proc Server) func(context.Context) (int, error) {
	return func(ctx context.Context) (int, error) {
		st, err := proc.Stats(ctx)
		return st.Lists + st.WatchLists, err
	}
}
