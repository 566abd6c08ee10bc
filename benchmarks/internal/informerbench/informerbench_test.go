package informerbench

import (
	"context"
	"errors"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	"k8s.io/client-go/rest"

	"github.com/warmcache/warmcache/benchmarks/internal/apiproc"
	"github.com/warmcache/warmcache/benchmarks/internal/kubeserver"
	"github.com/warmcache/warmcache/benchmarks/internal/measure"
)

func TestMain(m *testing.M) {
	// Start runs this test binary again as the API server, kubeserver
	// as its helper.
	apiproc.MaybeServe()
	kubeserver.MaybeServe()
	goleak.VerifyTestMain(m)
}

// testTimeout bounds every wait; reaching it is a failure.
const testTimeout = 2 * time.Minute

// testPods is large enough for the heap of the stores that keep objects to
// dwarf the informers' fixed overhead.
const testPods = 300

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	t.Cleanup(cancel)
	return ctx
}

func startProc(t *testing.T, pods int) *apiproc.Process {
	t.Helper()
	p, err := apiproc.Start(testContext(t), apiproc.Options{Pods: pods})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Errorf("close server: %v", err)
		}
	})
	return p
}

func TestCounter(t *testing.T) {
	c := &Counter{}
	ctx := testContext(t)
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	wg.Go(func() { errs <- c.WaitAdds(ctx, 50) })
	wg.Go(func() { errs <- c.WaitUpdates(ctx, 30) })
	for range 50 {
		wg.Go(func() { c.OnAdd(nil, true) })
	}
	for range 30 {
		wg.Go(func() { c.OnUpdate(nil, nil) })
	}
	c.OnDelete(nil)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if a, u, d := c.Counts(); a != 50 || u != 30 || d != 1 {
		t.Errorf("counts %d %d %d, want 50 30 1", a, u, d)
	}
	// Reached counts return at once.
	if err := c.WaitAdds(ctx, 50); err != nil {
		t.Error(err)
	}
	// Updates do not count as adds.
	short, cancel := context.WithCancel(ctx)
	cancel()
	if err := c.WaitAdds(short, 51); !errors.Is(err, context.Canceled) {
		t.Errorf("WaitAdds beyond the count with a cancelled context: %v", err)
	}
}

func TestStartErrors(t *testing.T) {
	ctx := testContext(t)
	cfg := &rest.Config{Host: "http://127.0.0.1:1"}
	if _, err := Start(ctx, "informer-of-doom", cfg, Options{}, true); !errors.Is(err, ErrUnknownImpl) {
		t.Errorf("unknown implementation: %v", err)
	}
	if _, err := Start(ctx, Bolt, cfg, Options{}, true); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("bolt without a directory: %v", err)
	}
}

func TestMeasureEveryImpl(t *testing.T) {
	proc := startProc(t, testPods)
	ctx := testContext(t)
	opts := RunOptions{Options: Options{Dir: t.TempDir()}, Updates: 120}
	var results []Result
	for i, impl := range Impls {
		r, err := Measure(ctx, proc, impl, testPods, i+1, opts)
		if err != nil {
			t.Fatalf("%s: %v", impl, err)
		}
		if r.Cold.Duration <= 0 || r.Events.PerSec <= 0 || r.Events.CPU <= 0 || r.Cold.CPU <= 0 || r.Cold.Heap.Peak <= 0 || r.Updates != 120 {
			t.Errorf("%s: incomplete result %+v", impl, r)
		}
		// Every informer syncs with one WatchList, as client-go's does
		// by default.
		if rq := r.Cold.Requests; rq.WatchLists != 1 || rq.Lists != 0 {
			t.Errorf("%s: cold sync made %d lists and %d WatchLists", impl, rq.Lists, rq.WatchLists)
		}
		if len(r.Relists) != len(DefaultRelistPercents) {
			t.Fatalf("%s: %d relists measured, want %d", impl, len(r.Relists), len(DefaultRelistPercents))
		}
		for j, rl := range r.Relists {
			if pct := DefaultRelistPercents[j]; rl.Percent != pct || rl.Changed != testPods*pct/100 || rl.Duration <= 0 || rl.Heap.Peak == 0 ||
				rl.Listed <= 0 || rl.Listed > rl.Duration || rl.CPU <= 0 {
				t.Errorf("%s: relist %d: incomplete result %+v", impl, j, rl)
			}
		}
		if (impl == Bolt) != (r.WarmReplay != nil && r.WarmNoHandler != nil) {
			t.Errorf("%s: warm restarts %v %v", impl, r.WarmReplay, r.WarmNoHandler)
		}
		results = append(results, r)
	}
	cg, mem, bolt := results[0].Cold.Heap.Settled/testPods, results[1].Cold.Heap.Settled/testPods, results[2].Cold.Heap.Settled/testPods
	if cg < 5000 || mem < cg/2 || mem > cg*2 || bolt > cg/4 {
		t.Errorf("steady heap per pod: client-go %.0f, memory %.0f, bolt %.0f", cg, mem, bolt)
	}

	for _, r := range results {
		// The server worked for every informer, and every informer
		// allocated and collected during its cold sync.
		if !r.Cold.Server.Known || r.Cold.Server.CPU <= 0 || !r.Events.Server.Known || r.Cold.GC.Allocs == 0 || r.Events.GC.Allocs == 0 {
			t.Errorf("%s: server CPU %+v %+v, GC %+v %+v", r.Impl, r.Cold.Server, r.Events.Server, r.Cold.GC, r.Events.GC)
		}
		if w := r.Events.Whole; w == nil || w.Measured != 120 || r.Events.Measured > 120 || r.Events.Steady && r.Events.Measured < 30 {
			t.Errorf("%s: churn measured %+v, whole %+v", r.Impl, r.Events, w)
		}
	}

	alone := &ServerAlone{
		Initial: Served{Events: 100, Elapsed: time.Second, Server: ServerCPU{CPU: 50 * time.Millisecond, Known: true}},
		Churn:   Served{Events: 10, Elapsed: time.Second},
	}
	tab := Table("t", results, alone)
	rows := map[string]measure.Row{}
	for _, r := range tab.Rows() {
		rows[r.Metric] = r
		if r.Target != nil && r.Target.Column != 2 {
			t.Errorf("row %s: target on column %d, want bolt's", r.Metric, r.Target.Column)
		}
	}
	if len(rows) != 33+4*len(DefaultRelistPercents) {
		t.Fatalf("%d rows", len(rows))
	}
	if restart := rows["restart to synced, 1% changed while down, told to a handler s (cold sync unless bolt)"]; restart.Values[0] != results[0].Cold.Duration.Seconds() ||
		restart.Values[2] != results[2].WarmReplay.Duration.Seconds() {
		t.Errorf("restart row %v: want client-go's cold sync and bolt's warm restart", restart.Values)
	}
	// The warm restart resumes: the resume check's one LIST, no
	// WatchList.
	if l, w := rows["warm restart LIST requests (the resume check)"].Values, rows["warm restart WatchList streams"].Values; l[2] != 1 || w[2] != 0 || !math.IsNaN(l[0]) {
		t.Errorf("warm restart requests: LISTs %v, WatchLists %v; want bolt's 1 and 0, client-go empty", l, w)
	}
	for _, name := range []string{"file MB after cold sync", "file MB after the churn"} {
		if v := rows[name].Values; !math.IsNaN(v[0]) || !math.IsNaN(v[1]) || !(v[2] > 0) {
			t.Errorf("%s %v: want client-go and memory empty, bolt's file size", name, v)
		}
	}
	if v := rows["warm restart without handler s"].Values; !math.IsNaN(v[0]) || math.IsNaN(v[2]) {
		t.Errorf("warm restart without handler %v: want client-go empty, bolt set", v)
	}
	if relist := rows["410 relist, 0% changed s"]; relist.Values[2] != results[2].Relists[0].Duration.Seconds() {
		t.Errorf("relist row %s %v: want bolt's first relist", relist.Metric, relist.Values)
	}
	if relist := rows["410 relist, 0% changed, from the list's start s"]; relist.Values[2] != results[2].Relists[0].Listed.Seconds() {
		t.Errorf("relist row %s %v: want bolt's first relist from its list", relist.Metric, relist.Values)
	}
	if relist := rows["410 relist, 0% changed CPU s"]; relist.Values[2] != results[2].Relists[0].CPU.Seconds() {
		t.Errorf("relist row %s %v: want bolt's first relist's CPU", relist.Metric, relist.Values)
	}
	if v := rows["whole churn: update events/s"].Values; v[2] != results[2].Events.Whole.PerSec {
		t.Errorf("whole churn events/s %v: want bolt's %v", v, results[2].Events.Whole.PerSec)
	}
	if v := rows["update GC cycles"].Values; v[1] != float64(results[1].Events.GC.Cycles) {
		t.Errorf("update GC cycles %v: want memory's %d", v, results[1].Events.GC.Cycles)
	}
	if v := rows["update server CPU µs/event"].Values; v[2] != measure.Micros(results[2].Events.Server.CPU/time.Duration(results[2].Events.Measured)) {
		t.Errorf("update server CPU %v: want bolt's per event", v)
	}
	for metric, want := range map[string]float64{
		"server alone: initial events/s":            100,
		"server alone: initial server CPU µs/event": 500,
		"server alone: update events/s":             10,
	} {
		if v := rows[metric].Values; v[0] != want || !math.IsNaN(v[1]) || !math.IsNaN(v[2]) {
			t.Errorf("%s: %v, want %v in the first column only", metric, v, want)
		}
	}
	// Unknown server CPU prints as missing.
	if v := rows["server alone: update server CPU µs/event"].Values; !math.IsNaN(v[0]) {
		t.Errorf("unknown server CPU: %v", v)
	}
	if n := len(Table("t", results, nil).Rows()); n != len(rows)-4 {
		t.Errorf("%d rows without the server alone, want %d", n, len(rows)-4)
	}

	// Over a hot set, every row of the churn names it, and no other row.
	hotResults := slices.Clone(results)
	for i := range hotResults {
		hotResults[i].ChurnHot = 7
	}
	hotAlone := *alone
	hotAlone.ChurnHot = 7
	hotRows := Table("t", hotResults, &hotAlone).Rows()
	if len(hotRows) != len(rows) {
		t.Errorf("%d rows over a hot set, want %d", len(hotRows), len(rows))
	}
	labelled := 0
	for _, r := range hotRows {
		base, isHot := strings.CutSuffix(r.Metric, ", hot set of 7 pods")
		churn := strings.HasPrefix(base, "update ") || strings.HasPrefix(base, "whole churn: ") ||
			strings.HasPrefix(base, "server alone: update ") || base == "file MB after the churn"
		if churn != isHot {
			t.Errorf("row %q over a hot set of 7 pods", r.Metric)
		}
		if _, ok := rows[base]; !ok {
			t.Errorf("row %q over a hot set: no row %q without", r.Metric, base)
		}
		if isHot {
			labelled++
		}
	}
	if labelled != 15 {
		t.Errorf("%d rows name the hot set, want the churn's 15", labelled)
	}
}

func TestMeasureServerAlone(t *testing.T) {
	proc := startProc(t, testPods)
	ctx := testContext(t)
	a, err := MeasureServerAlone(ctx, proc, testPods, 40, 1, 0, "")
	if err != nil {
		t.Fatal(err)
	}
	if a.Initial.Events != testPods || a.Churn.Events != 40 || a.Initial.PerSec() <= 0 || a.Churn.PerSec() <= 0 {
		t.Errorf("incomplete %+v", a)
	}
	// Every pod, in protobuf, is more than a kilobyte; so is the server's
	// CPU time per pod more than nothing.
	if a.Initial.Bytes < testPods*1000 || a.Churn.Bytes < 40*1000 || !a.Initial.Server.Known || a.Initial.Server.CPU <= 0 {
		t.Errorf("server alone %+v", a)
	}
	// One WatchList, then one watch of the churn.
	st, err := proc.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.WatchLists != 1 || st.Watches != 2 {
		t.Errorf("server stats %+v: want one WatchList and one watch", st)
	}
	if _, err := MeasureServerAlone(ctx, proc, testPods, 0, 1, 0, ""); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("no updates: %v", err)
	}
	for _, hot := range []int{-1, testPods + 1} {
		if _, err := MeasureServerAlone(ctx, proc, testPods, 10, 2, hot, ""); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("hot set of %d pods: %v", hot, err)
		}
	}
	// The same over a hot set: the backlog is as long, of its pods.
	h, err := MeasureServerAlone(ctx, proc, testPods, 40, 2, 3, "")
	if err != nil {
		t.Fatal(err)
	}
	if h.ChurnHot != 3 || h.Churn.Events != 40 || h.Churn.Bytes < 40*1000 || h.Churn.PerSec() <= 0 {
		t.Errorf("server alone over a hot set of 3 pods: %+v", h)
	}
}

func TestChurnHotSet(t *testing.T) {
	proc := startProc(t, 50)
	ctx := testContext(t)
	opts := Options{Dir: t.TempDir()}
	for _, impl := range Impls {
		t.Run(impl, func(t *testing.T) {
			inf, _, err := ColdSync(ctx, proc, impl, 50, opts)
			if err != nil {
				t.Fatal(err)
			}
			defer func() {
				if err := inf.Stop(); err != nil {
					t.Error(err)
				}
			}()
			// Each of the 3 pods is updated 20 times, many in one
			// batch of the watch: the handler is told of every update.
			ev, err := Churn(ctx, proc, inf, 60, 1, 3)
			if err != nil {
				t.Fatal(err)
			}
			if w := ev.Whole; w == nil || w.Measured != 60 || w.PerSec <= 0 {
				t.Errorf("churn over a hot set measured %+v, whole %+v", ev, w)
			}
			if _, updates, _ := inf.Counter.Counts(); updates != 60 {
				t.Errorf("handler told of %d updates, want 60", updates)
			}
			// A hot set above the server's pods is refused.
			if _, err := Churn(ctx, proc, inf, 1, 2, 51); !errors.Is(err, apiproc.ErrServer) {
				t.Errorf("churn over a hot set of 51 of 50 pods: %v, want apiproc.ErrServer", err)
			}
		})
	}
}

func TestWarmRestartResumesTheWatch(t *testing.T) {
	proc := startProc(t, 50)
	ctx := testContext(t)
	opts := Options{Dir: t.TempDir()}
	inf, _, err := ColdSync(ctx, proc, Bolt, 50, opts)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Churn(ctx, proc, inf, 20, 1, 0); err != nil {
		t.Fatal(err)
	}
	if err := inf.Stop(); err != nil {
		t.Fatal(err)
	}
	for i, withHandler := range []bool{true, false} {
		// Five pods change while the informer is down; the restart is
		// synced once caught up with them (WarmRestart checks the
		// handler was told the 50 pods and nothing else).
		w, err := WarmRestart(ctx, proc, 50, opts, withHandler, 5, 10+i)
		if err != nil {
			t.Fatal(err)
		}
		if w.Duration <= 0 || w.Changed != 5 {
			t.Errorf("warm restart took %v after %d changes", w.Duration, w.Changed)
		}
		// It watches from the file's resourceVersion: no relist, only
		// the resume check (one LIST of at most one object).
		if w.Lists != 1 || w.WatchLists != 0 {
			t.Errorf("warm restart served %d LISTs and %d WatchLists, want the resume check only", w.Lists, w.WatchLists)
		}
	}
	if err := RemoveBoltFile(opts); err != nil {
		t.Fatal(err)
	}
}

func TestChurnRejectsBadArguments(t *testing.T) {
	proc := startProc(t, 5)
	ctx := testContext(t)
	inf, _, err := ColdSync(ctx, proc, Memory, 5, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer inf.Stop()
	for _, c := range [][3]int{{0, 1, 0}, {1, 0, 0}, {1, 1, -1}} {
		if _, err := Churn(ctx, proc, inf, c[0], c[1], c[2]); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("Churn(%d, %d, %d) = %v, want ErrInvalidArgument", c[0], c[1], c[2], err)
		}
	}
	if _, _, err := ColdSync(ctx, proc, Memory, 0, Options{}); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("ColdSync of 0 pods: %v", err)
	}
}
