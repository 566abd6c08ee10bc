package informerbench

import (
	"runtime/debug"
	"testing"
	"time"

	"github.com/warmcache/warmcache/benchmarks/internal/measure"
)

func TestSteadyWindow(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(updates, cycles int, secs float64, cpuMs int) gcSample {
		return gcSample{
			at: t0.Add(time.Duration(secs * float64(time.Second))), cpu: time.Duration(cpuMs) * time.Millisecond,
			server: time.Duration(cpuMs/2) * time.Millisecond, serverOK: true,
			updates: updates, gc: measure.GC{Cycles: uint64(cycles), Allocs: uint64(updates) * 1000},
		}
	}
	for _, tc := range []struct {
		name    string
		samples []gcSample
		min     int
		ok      bool
		from    int // index of the window's first sample
	}{
		{"no collection", nil, 10, false, 0},
		{"one collection", []gcSample{at(5, 1, 1, 10)}, 1, false, 0},
		{"periods too short", []gcSample{at(5, 1, 1, 10), at(9, 2, 2, 20)}, 5, false, 0},
		{"no notification between", []gcSample{at(5, 1, 1, 10), at(5, 2, 2, 20)}, 0, false, 0},
		{"whole periods", []gcSample{at(10, 3, 1, 100), at(60, 4, 2, 200), at(110, 6, 3, 400)}, 50, true, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			from, to, ok := steadyWindow(tc.samples, tc.min)
			if ok != tc.ok {
				t.Fatalf("ok = %v, want %v", ok, tc.ok)
			}
			if !ok {
				return
			}
			if from != tc.samples[tc.from] || to != tc.samples[len(tc.samples)-1] {
				t.Fatalf("window %+v to %+v", from, to)
			}
			ev := eventsBetween(from, to)
			// 100 notifications in 2 s, 300 ms of CPU, 150 of the
			// server's, 3 collections, 100 KB allocated.
			if ev.Measured != 100 || ev.PerSec != 50 || ev.CPU != 3*time.Millisecond || ev.Server != (ServerCPU{CPU: 150 * time.Millisecond, Known: true}) ||
				ev.GC != (measure.GC{Cycles: 3, Allocs: 100000}) {
				t.Errorf("events %+v", ev)
			}
		})
	}
}

func TestChurnMeasuresWholeGCPeriods(t *testing.T) {
	// Collections after every few updates: the churn holds many.
	defer debug.SetGCPercent(debug.SetGCPercent(1))
	const pods, updates = 40, 400
	proc := startProc(t, pods)
	ctx := testContext(t)
	inf, _, err := ColdSync(ctx, proc, Memory, pods, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := inf.Stop(); err != nil {
			t.Error(err)
		}
	}()
	ev, err := Churn(ctx, proc, inf, updates, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !ev.Steady || ev.Measured < updates/4 || ev.Measured > updates || ev.GC.Cycles == 0 || ev.PerSec <= 0 || ev.CPU <= 0 {
		t.Errorf("churn of %d updates: %+v, want whole GC periods over at least a quarter of them", updates, ev)
	}
	if w := ev.Whole; w == nil || w.Steady || w.Measured != updates || w.GC.Cycles < ev.GC.Cycles || w.Whole != nil {
		t.Errorf("whole churn %+v, steady part %+v", w, ev)
	}
}
