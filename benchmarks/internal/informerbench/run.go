package informerbench

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"runtime/debug"
	"time"

	"github.com/warmcache/warmcache/benchmarks/internal/apiproc"
	"github.com/warmcache/warmcache/benchmarks/internal/measure"
)

// Heap is a heap measurement of one phase, in bytes above the settled heap
// before the phase.
type Heap struct {
	// Peak is the largest heap (live objects and garbage not yet
	// collected) sampled every measure.DefaultPeakInterval during the
	// phase.
	Peak float64
	// Settled is the live heap after the phase, after two collections.
	Settled float64
}

func above(v, base uint64) float64 { return float64(int64(v) - int64(base)) }

// Cold is what ColdSync measured.
type Cold struct {
	// Duration runs from building the informer to HasSynced and the
	// handler having been told of every pod.
	Duration time.Duration
	// CPU is the CPU time this process used meanwhile (the server runs in
	// another): on a shared machine, the cost that does not depend on how
	// busy it is. Zero where the process's CPU time is unknown.
	CPU  time.Duration
	Heap Heap
	// Requests are the server's list and watch counts during the sync.
	Requests apiproc.Stats
	// Server is what the server process used meanwhile; GC is this
	// process's collections.
	Server ServerCPU
	GC     measure.GC
}

// ColdSync starts an informer of impl with a counting handler on an empty
// store (the bolt file is removed first) and waits until it has synced the
// server's n pods. The informer keeps running; the caller stops it.
func ColdSync(ctx context.Context, proc Server, impl string, n int, opts Options) (*Informer, Cold, error) {
	var c Cold
	if n <= 0 {
		return nil, c, fmt.Errorf("%w: %d pods", ErrInvalidArgument, n)
	}
	if impl == Bolt {
		if err := RemoveBoltFile(opts); err != nil {
			return nil, c, err
		}
	}
	before, err := proc.Stats(ctx)
	if err != nil {
		return nil, c, err
	}
	base := measure.SettledHeap()
	peak := measure.StartPeak(0)
	m := startMeter(proc)
	inf, err := Start(ctx, impl, proc.Config(""), opts, true)
	if err != nil {
		peak.Stop()
		return nil, c, err
	}
	if err := inf.WaitSynced(ctx, n); err != nil {
		peak.Stop()
		return nil, c, errors.Join(err, inf.Stop())
	}
	m.stop()
	c.Duration, c.CPU, c.Server, c.GC = m.sw.Elapsed(), m.sw.CPU(), m.server, m.gc
	c.Heap.Peak = above(peak.Stop(), base)
	c.Heap.Settled = above(measure.SettledHeap(), base)
	after, err := proc.Stats(ctx)
	if err != nil {
		return nil, c, errors.Join(err, inf.Stop())
	}
	c.Requests = apiproc.Stats{
		ResourceVersion: after.ResourceVersion,
		Lists:           after.Lists - before.Lists,
		Watches:         after.Watches - before.Watches,
		WatchLists:      after.WatchLists - before.WatchLists,
	}
	return inf, c, nil
}

// Events is what Churn measured: the figures of whole GC periods of this
// process within the churn when it held them (Steady), else of the whole
// churn.
type Events struct {
	// PerSec is the rate of update notifications the handler received.
	PerSec float64
	// CPU is this process's CPU time per notification.
	CPU time.Duration
	// Server is what the server process used meanwhile, in all; GC is
	// this process's collections.
	Server ServerCPU
	GC     measure.GC
	// Measured is the number of notifications the figures are of.
	Measured int
	// Steady is true when the figures are of whole GC periods.
	Steady bool
	// Whole holds the figures of the whole churn, from the release of the
	// updates to the last notification; nil in itself.
	Whole *Events
	// Writes is the rate at which the server applied the updates, per
	// second: while the watches were held back on the fake servers,
	// through its API, as the watchers received them, on kube-apiserver.
	// Zero if unknown.
	Writes float64
}

// Churn has the server make `updates` updates of pods (Server.Updates:
// applied while the watch streams are held back, then released, on the
// fake servers; made through the API as the watchers receive them on
// kube-apiserver) and measures the update notifications the running
// informer's handler receives, from the release to the last one,
// and within that the whole GC periods of this process (see gcSample)
// when they span at least a quarter of the updates. With hot 0 the
// updates are spread over every pod; with hot > 0 they cycle over a hot
// set of hot pods (see apiproc.Process.Churn), at most the server's.
func Churn(ctx context.Context, proc Server, inf *Informer, updates, gen, hot int) (Events, error) {
	var ev Events
	if inf.Counter == nil || updates <= 0 || gen <= 0 || hot < 0 {
		return ev, fmt.Errorf("%w: churn of %d updates, generation %d, hot set of %d pods, on an informer with a handler", ErrInvalidArgument, updates, gen, hot)
	}
	_, seen, _ := inf.Counter.Counts()
	release, err := proc.Updates(ctx, updates, gen, hot)
	if err != nil {
		return ev, err
	}
	m := startMeter(proc)
	gs := startGCSampler(inf.Counter, proc, seen)
	applied, err := release(ctx)
	if err != nil {
		gs.stop()
		return ev, err
	}
	err = inf.Counter.WaitUpdates(ctx, seen+updates)
	samples := gs.stop()
	if err != nil {
		return ev, err
	}
	m.stop()
	whole := Events{
		PerSec:   measure.PerSecond(updates, m.sw.Elapsed()),
		CPU:      m.sw.CPU() / time.Duration(updates),
		Server:   m.server,
		GC:       m.gc,
		Measured: updates,
	}
	ev = whole
	if from, to, ok := steadyWindow(samples, updates/4); ok {
		ev = eventsBetween(from, to)
		ev.Steady = true
	}
	ev.Whole = &whole
	if applied.Seconds > 0 {
		ev.Writes = float64(updates) / applied.Seconds
	}
	return ev, nil
}

// Warm is what WarmRestart measured.
type Warm struct {
	// Changed is the number of pods the server changed while the
	// informer was down.
	Changed int
	// Duration runs from opening the file to HasSynced and, with a
	// handler, the handler having been told of every pod: the synced
	// informer has caught up with those changes.
	Duration time.Duration
	// CPU is the CPU time this process used meanwhile.
	CPU  time.Duration
	Heap Heap
	// Lists and WatchLists are the LIST requests and WatchList streams
	// the server served meanwhile: the resume check's LIST of at most one
	// object, and no WatchList, unless the warm start relisted.
	Lists, WatchLists int
}

// WarmRestart changes changed of the server's n pods (generation gen), as
// a cluster does while a controller is down, then starts a bolt informer
// on the file a previous one left (opts.BoltPath()), with a counting
// handler or none, waits until it has synced with n pods (caught up with
// the changes), and stops it.
func WarmRestart(ctx context.Context, proc Server, n int, opts Options, withHandler bool, changed, gen int) (Warm, error) {
	w := Warm{Changed: changed}
	if changed > 0 {
		if _, err := proc.Churn(ctx, changed, gen, 0); err != nil {
			return w, errors.Join(err, proc.Open(ctx))
		}
		if err := proc.Open(ctx); err != nil {
			return w, err
		}
	}
	before, err := proc.Stats(ctx)
	if err != nil {
		return w, err
	}
	base := measure.SettledHeap()
	peak := measure.StartPeak(0)
	var sw measure.Stopwatch
	sw.StartTimer()
	inf, err := Start(ctx, Bolt, proc.Config(""), opts, withHandler)
	if err != nil {
		peak.Stop()
		return w, err
	}
	if err := inf.WaitSynced(ctx, n); err != nil {
		peak.Stop()
		return w, errors.Join(err, inf.Stop())
	}
	sw.StopTimer()
	w.Duration, w.CPU = sw.Elapsed(), sw.CPU()
	w.Heap.Peak = above(peak.Stop(), base)
	w.Heap.Settled = above(measure.SettledHeap(), base)
	after, err := proc.Stats(ctx)
	if err != nil {
		return w, errors.Join(err, inf.Stop())
	}
	w.Lists, w.WatchLists = after.Lists-before.Lists, after.WatchLists-before.WatchLists
	if withHandler {
		if adds, updates, deletes := inf.Counter.Counts(); adds != n || updates != 0 || deletes != 0 {
			return w, errors.Join(fmt.Errorf("informerbench: warm restart told %d adds, %d updates and %d deletes; want %d adds (the caught-up store) and nothing else",
				adds, updates, deletes, n), inf.Stop())
		}
	}
	return w, inf.Stop()
}

// RunOptions configures Measure.
type RunOptions struct {
	Options
	// Updates is the number of updates of the events/s measurement.
	// Default DefaultUpdates(n).
	Updates int
	// ChurnHot, when positive, restricts the updates of the events/s
	// measurement to a hot set of that many pods (at most n), each
	// updated about Updates/ChurnHot times, as a rollout updates a few
	// pods many times; 0 spreads them over every pod. The relists'
	// changes are spread over every pod either way.
	ChurnHot int
	// RelistPercents are the relists measured after the churn: for each,
	// that percentage of the pods changes during an outage that ends in
	// 410 Expired (see Relist). Default DefaultRelistPercents; an empty
	// non-nil slice measures none.
	RelistPercents []int
	// ProfileDir, when set, receives a CPU profile of each phase of each
	// implementation: IMPL-cold.pprof, IMPL-churn.pprof,
	// IMPL-relistPCT.pprof for each relist and, for Bolt,
	// IMPL-warm-replay.pprof and IMPL-warm-nohandler.pprof (the warm
	// restarts, the churn while down included).
	ProfileDir string
}

// DefaultUpdates returns the default number of updates of the events/s
// measurement with n pods.
// They are enough for client-go's informer, which collects its heap of
// about 15 KB per pod once per about n/2 to 2n/3 updates, to run six
// collections or more during the churn, up to 100k pods, so that Churn
// measures several whole GC periods: with two (1.5n updates, the default
// before), the one period measured decided client-go's CPU per update,
// which ranged from 99 to 141 µs in three runs of the same day against
// 89-91 µs over six periods.
func DefaultUpdates(n int) int { return min(4*n, 400000) }

// DefaultRelistPercents are the relists Measure runs by default.
var DefaultRelistPercents = []int{0, 10, 100}

// Result is what Measure found for one implementation.
type Result struct {
	Impl    string
	N       int
	Updates int
	// ChurnHot is the hot set the updates were restricted to; 0 for
	// every pod (see RunOptions.ChurnHot).
	ChurnHot int
	Cold     Cold
	// Events is the sustained rate of update notifications.
	Events Events
	// WarmReplay and WarmNoHandler are the bolt informer's restarts with
	// a handler (every stored pod replayed to it) and without; zero for
	// the other implementations, whose restart is a cold sync.
	WarmReplay, WarmNoHandler *Warm
	// Relists are the 410 relists, in RunOptions.RelistPercents order.
	Relists []Relisted
	// ColdFileBytes and ChurnFileBytes are the sizes of the bolt store's
	// file after the cold sync and after the churn; zero for the other
	// implementations.
	ColdFileBytes, ChurnFileBytes int64
}

// boltFileSize returns the size of the bolt store's file, or 0 for another
// implementation.
func boltFileSize(impl string, opts Options) (int64, error) {
	if impl != Bolt {
		return 0, nil
	}
	fi, err := os.Stat(opts.BoltPath())
	if err != nil {
		return 0, fmt.Errorf("informerbench: %w", err)
	}
	return fi.Size(), nil
}

// Measure runs, for impl, a cold sync of the server's n pods, the churn of
// opts.Updates updates (generation gen; over opts.ChurnHot pods if set),
// the 410 relists of
// opts.RelistPercents and, for Bolt, the two warm restarts. It compacts
// the server's history afterwards.
func Measure(ctx context.Context, proc Server, impl string, n, gen int, opts RunOptions) (Result, error) {
	if opts.Updates <= 0 {
		opts.Updates = DefaultUpdates(n)
	}
	res := Result{Impl: impl, N: n, Updates: opts.Updates, ChurnHot: opts.ChurnHot}
	stop, err := startProfile(opts.ProfileDir, impl, "cold")
	if err != nil {
		return res, err
	}
	inf, cold, err := ColdSync(ctx, proc, impl, n, opts.Options)
	if err = errors.Join(err, stop()); err != nil {
		if inf != nil {
			err = errors.Join(err, inf.Stop())
		}
		return res, err
	}
	res.Cold = cold
	if res.ColdFileBytes, err = boltFileSize(impl, opts.Options); err != nil {
		return res, errors.Join(err, inf.Stop())
	}
	if stop, err = startProfile(opts.ProfileDir, impl, "churn"); err != nil {
		return res, errors.Join(err, inf.Stop())
	}
	res.Events, err = Churn(ctx, proc, inf, opts.Updates, gen, opts.ChurnHot)
	err = errors.Join(err, stop())
	if err == nil {
		res.ChurnFileBytes, err = boltFileSize(impl, opts.Options)
	}
	if opts.RelistPercents == nil {
		opts.RelistPercents = DefaultRelistPercents
	}
	for i, pct := range opts.RelistPercents {
		if err != nil {
			break
		}
		var r Relisted
		// Generations of the relists' updates and markers follow the
		// churn's, distinct per implementation too.
		if stop, err = startProfile(opts.ProfileDir, impl, fmt.Sprintf("relist%d", pct)); err != nil {
			break
		}
		r, err = Relist(ctx, proc, inf, n, pct, gen*1000+2*i+1)
		err = errors.Join(err, stop())
		res.Relists = append(res.Relists, r)
	}
	rv := inf.ResourceVersion()
	if err = errors.Join(err, inf.Stop()); err != nil {
		return res, err
	}
	// Free the history of the churn, keeping what a warm restart resumes
	// from.
	if impl != Bolt {
		rv = ""
	}
	if err := proc.Compact(ctx, rv); err != nil {
		return res, err
	}
	if impl == Bolt {
		for i, withHandler := range []bool{true, false} {
			// 1% of the pods change while the informer is down.
			phase := "warm-replay"
			if !withHandler {
				phase = "warm-nohandler"
			}
			stop, err := startProfile(opts.ProfileDir, impl, phase)
			if err != nil {
				return res, err
			}
			w, err := WarmRestart(ctx, proc, n, opts.Options, withHandler, n/100, gen*1000+900+i)
			if err = errors.Join(err, stop()); err != nil {
				return res, err
			}
			if withHandler {
				res.WarmReplay = &w
			} else {
				res.WarmNoHandler = &w
			}
		}
		if err := RemoveBoltFile(opts.Options); err != nil {
			return res, err
		}
	}
	// Return the memory to the OS before the next implementation runs
	// (see storebench): background scavenging would slow it down.
	debug.FreeOSMemory()
	return res, nil
}

// Targets are the goals of the issue that asked for these benchmarks, for
// the bolt informer at 100k pods.
const (
	// TargetSteadyHeapRatio: steady heap at most 1/20 of client-go's.
	TargetSteadyHeapRatio = 1.0 / 20
	// TargetWarmRatio: warm restart with replay at most 0.3 of
	// client-go's cold sync.
	TargetWarmRatio = 0.3
	// TargetColdRatio: cold sync time at most 0.8 of client-go's.
	TargetColdRatio = 0.8
	// TargetEventsRatio: update events/s at least client-go's.
	TargetEventsRatio = 1.0
	// TargetUpdateCPURatio: CPU per update event at most 1.3 of
	// client-go's.
	TargetUpdateCPURatio = 1.3
)

const mb = 1 << 20

// churnLabel returns metric, a row of a churn's figures, labelled with its
// hot set when it had one ("update events/s, hot set of 100 pods"), so that
// a row pasted alone cannot pass for the uniform churn's.
func churnLabel(metric string, hot int) string {
	if hot <= 0 {
		return metric
	}
	return fmt.Sprintf("%s, hot set of %d pods", metric, hot)
}

// Table lays results out side by side, the first being the baseline, with
// the targets on the bolt column when there is one, then, when alone is
// not nil, the server measured alone (its figures in the first column).
// The churn's rows name its hot set when results[0] had one (see
// churnLabel).
func Table(title string, results []Result, alone *ServerAlone) *measure.Table {
	t := &measure.Table{Title: title}
	hot := 0
	if len(results) > 0 {
		hot = results[0].ChurnHot
	}
	churnRow := func(metric string) string { return churnLabel(metric, hot) }
	boltCol := measure.SetColumns(t, results, func(r Result) string { return r.Impl }, Bolt)
	target := func(tg measure.Target) *measure.Target {
		if boltCol < 0 {
			return nil
		}
		tg.Column, tg.Ratio = boltCol, true
		return &tg
	}
	col := func(f func(Result) float64) []float64 { return measure.Values(results, f) }
	warm := func(w *Warm, f func(Warm) float64) float64 {
		if w == nil {
			return math.NaN()
		}
		return f(*w)
	}
	t.Add("cold sync s", target(measure.Target{AtMost: true, Value: TargetColdRatio}), col(func(r Result) float64 { return r.Cold.Duration.Seconds() })...)
	t.Add("cold sync CPU s", nil, col(func(r Result) float64 { return r.Cold.CPU.Seconds() })...)
	t.Add("cold sync server CPU s", nil, col(func(r Result) float64 { return serverSeconds(r.Cold.Server) })...)
	t.Add("cold sync GC cycles", nil, col(func(r Result) float64 { return float64(r.Cold.GC.Cycles) })...)
	t.Add("cold sync allocated MB", nil, col(func(r Result) float64 { return float64(r.Cold.GC.Allocs) / mb })...)
	t.Add("cold sync GC CPU s (runtime's estimate)", nil, col(func(r Result) float64 { return r.Cold.GC.CPU.Seconds() })...)
	t.Add("cold sync peak heap MB", nil, col(func(r Result) float64 { return r.Cold.Heap.Peak / mb })...)
	t.Add("steady heap MB", nil, col(func(r Result) float64 { return r.Cold.Heap.Settled / mb })...)
	t.Add("steady heap bytes/pod", target(measure.Target{AtMost: true, Value: TargetSteadyHeapRatio}),
		col(func(r Result) float64 { return r.Cold.Heap.Settled / float64(r.N) })...)
	t.Add("restart to synced, 1% changed while down, told to a handler s (cold sync unless bolt)", target(measure.Target{AtMost: true, Value: TargetWarmRatio}),
		col(func(r Result) float64 {
			if r.WarmReplay != nil {
				return r.WarmReplay.Duration.Seconds()
			}
			return r.Cold.Duration.Seconds()
		})...)
	t.Add("warm restart with replay CPU s", nil,
		col(func(r Result) float64 { return warm(r.WarmReplay, func(w Warm) float64 { return w.CPU.Seconds() }) })...)
	t.Add("warm restart without handler s", nil,
		col(func(r Result) float64 {
			return warm(r.WarmNoHandler, func(w Warm) float64 { return w.Duration.Seconds() })
		})...)
	t.Add("warm restart LIST requests (the resume check)", nil,
		col(func(r Result) float64 { return warm(r.WarmReplay, func(w Warm) float64 { return float64(w.Lists) }) })...)
	t.Add("warm restart WatchList streams", nil,
		col(func(r Result) float64 {
			return warm(r.WarmReplay, func(w Warm) float64 { return float64(w.WatchLists) })
		})...)
	t.Add("warm restart peak heap MB", nil,
		col(func(r Result) float64 { return warm(r.WarmReplay, func(w Warm) float64 { return w.Heap.Peak / mb }) })...)
	fileMB := func(f func(Result) int64) func(Result) float64 {
		return func(r Result) float64 {
			if f(r) == 0 {
				return math.NaN()
			}
			return float64(f(r)) / mb
		}
	}
	t.Add("file MB after cold sync", nil, col(fileMB(func(r Result) int64 { return r.ColdFileBytes }))...)
	t.Add(churnRow("file MB after the churn"), nil, col(fileMB(func(r Result) int64 { return r.ChurnFileBytes }))...)
	t.Add(churnRow("update events/s"), target(measure.Target{Value: TargetEventsRatio}),
		col(func(r Result) float64 { return r.Events.PerSec })...)
	t.Add(churnRow("update writes/s the server applied"), nil, col(func(r Result) float64 {
		if r.Events.Writes == 0 {
			return math.NaN()
		}
		return r.Events.Writes
	})...)
	t.Add(churnRow("update CPU µs/event"), target(measure.Target{AtMost: true, Value: TargetUpdateCPURatio}), col(func(r Result) float64 { return measure.Micros(r.Events.CPU) })...)
	t.Add(churnRow("update server CPU µs/event"), nil, col(func(r Result) float64 {
		return perEvent(r.Events.Server, r.Events.Measured)
	})...)
	t.Add(churnRow("update GC cycles"), nil, col(func(r Result) float64 { return float64(r.Events.GC.Cycles) })...)
	t.Add(churnRow("update allocated KB/event"), nil, col(func(r Result) float64 {
		return float64(r.Events.GC.Allocs) / 1024 / float64(r.Events.Measured)
	})...)
	t.Add(churnRow("update GC CPU µs/event (runtime's estimate)"), nil, col(func(r Result) float64 {
		return measure.Micros(r.Events.GC.CPU) / float64(r.Events.Measured)
	})...)
	t.Add(churnRow("update events measured (whole GC periods)"), nil, col(func(r Result) float64 {
		if !r.Events.Steady {
			return math.NaN()
		}
		return float64(r.Events.Measured)
	})...)
	whole := func(f func(Events) float64) func(Result) float64 {
		return func(r Result) float64 {
			if r.Events.Whole == nil {
				return math.NaN()
			}
			return f(*r.Events.Whole)
		}
	}
	t.Add(churnRow("whole churn: update events/s"), nil, col(whole(func(e Events) float64 { return e.PerSec }))...)
	t.Add(churnRow("whole churn: update CPU µs/event"), nil, col(whole(func(e Events) float64 { return measure.Micros(e.CPU) }))...)
	t.Add(churnRow("whole churn: GC cycles"), nil, col(whole(func(e Events) float64 { return float64(e.GC.Cycles) }))...)
	t.Add(churnRow("whole churn: GC CPU µs/event (runtime's estimate)"), nil, col(whole(func(e Events) float64 {
		return measure.Micros(e.GC.CPU) / float64(e.Measured)
	}))...)
	relist := func(i int, f func(Relisted) float64) func(Result) float64 {
		return func(r Result) float64 {
			if i >= len(r.Relists) {
				return math.NaN()
			}
			return f(r.Relists[i])
		}
	}
	if len(results) > 0 {
		for i, rl := range results[0].Relists {
			t.Add(fmt.Sprintf("410 relist, %d%% changed s", rl.Percent), nil,
				col(relist(i, func(r Relisted) float64 { return r.Duration.Seconds() }))...)
			t.Add(fmt.Sprintf("410 relist, %d%% changed, from the list's start s", rl.Percent), nil,
				col(relist(i, func(r Relisted) float64 { return r.Listed.Seconds() }))...)
			t.Add(fmt.Sprintf("410 relist, %d%% changed CPU s", rl.Percent), nil,
				col(relist(i, func(r Relisted) float64 { return r.CPU.Seconds() }))...)
			t.Add(fmt.Sprintf("410 relist, %d%% changed peak heap MB", rl.Percent), nil,
				col(relist(i, func(r Relisted) float64 { return r.Heap.Peak / mb }))...)
		}
	}
	if alone != nil && len(results) > 0 {
		first := func(v float64) []float64 {
			out := col(func(Result) float64 { return math.NaN() })
			out[0] = v
			return out
		}
		t.Add("server alone: initial events/s", nil, first(alone.Initial.PerSec())...)
		t.Add("server alone: initial server CPU µs/event", nil, first(perEvent(alone.Initial.Server, alone.Initial.Events))...)
		t.Add(churnLabel("server alone: update events/s", alone.ChurnHot), nil, first(alone.Churn.PerSec())...)
		t.Add(churnLabel("server alone: update server CPU µs/event", alone.ChurnHot), nil, first(perEvent(alone.Churn.Server, alone.Churn.Events))...)
	}
	return t
}

// serverSeconds returns the server's CPU seconds, NaN if unknown.
func serverSeconds(s ServerCPU) float64 {
	if !s.Known {
		return math.NaN()
	}
	return s.CPU.Seconds()
}

// perEvent returns the server's CPU µs per event, NaN if unknown.
func perEvent(s ServerCPU, events int) float64 {
	if !s.Known || events <= 0 {
		return math.NaN()
	}
	return measure.Micros(s.CPU / time.Duration(events))
}
