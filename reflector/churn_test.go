package reflector

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/warmcache/warmcache/internal/fakesource"
	"github.com/warmcache/warmcache/internal/testkit"
)

// TestChurnConverges applies random changes, restarts, compactions,
// bookmarks and injected failures while a reflector runs, then checks
// that the stream it pushed, applied to an in-memory model, equals the
// source's state, and that it never broke the Sink protocol (no live
// event inside a replace, no RV going back; with a ReplaceAborter Sink, no
// BeginReplace while a replace is open).
func TestChurnConverges(t *testing.T) {
	cases := []struct {
		name    string
		policy  WatchListPolicy
		opts    fakesource.Options
		warm    bool
		aborter bool
	}{
		{"WatchList", WatchListAuto, fakesource.Options{}, false, false},
		{"LIST without watch cache", WatchListOff, fakesource.Options{DisableWatchCache: true}, false, false},
		{"warm start, expired as errors", WatchListAuto, fakesource.Options{ExpiredAsError: true}, true, false},
		{"WatchList, aborting sink", WatchListAuto, fakesource.Options{}, false, true},
		{"LIST, aborting sink", WatchListOff, fakesource.Options{DisableWatchCache: true}, false, true},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(i), 42))
			src := newSource(t, tc.opts)
			for j := range 40 {
				mustAdd(t, src, testkit.Pod(fmt.Sprintf("p%02d", j), ""))
			}
			sink := newRecorder()
			opts := Options{ListPageSize: 7, UseWatchList: tc.policy, MaxInternalErrorRetryDuration: time.Minute}
			if tc.warm {
				sink.seed(src)
				rv := src.ResourceVersion()
				opts.ResumeFrom = func() (string, bool) { return rv, true }
			}
			var h *harness
			if tc.aborter {
				sink.strict = true
				h = runSink(t, src, sink, abortingRecorder{sink}, opts)
			} else {
				h = run(t, src, sink, opts)
			}
			// Step the clock through every backoff the reflector takes.
			stopDriver := make(chan struct{})
			driverDone := make(chan struct{})
			go func() {
				defer close(driverDone)
				for {
					select {
					case d := <-h.clk.timers:
						h.clk.Step(d)
					case <-stopDriver:
						return
					}
				}
			}()
			defer func() {
				h.stop()
				close(stopDriver)
				<-driverDone
			}()

			live := map[string]bool{}
			for _, o := range src.Objects(podGVK) {
				_, name, _ := describeObj(o)
				live[name] = true
			}
			next := 40
			for range 400 {
				switch op := rng.IntN(100); {
				case op < 30:
					name := fmt.Sprintf("p%02d", next)
					next++
					mustAdd(t, src, testkit.Pod(name, ""))
					live[name] = true
				case op < 60 && len(live) > 0:
					mustUpdate(t, src, podL(pick(rng, live), fmt.Sprint(op)))
				case op < 85 && len(live) > 0:
					name := pick(rng, live)
					mustDelete(t, src, testkit.Pod(name, ""))
					delete(live, name)
				case op < 90:
					src.SendBookmark()
				case op < 93:
					src.Restart()
				case op < 95:
					if err := src.Compact(src.ResourceVersion()); err != nil {
						t.Fatal(err)
					}
				case op < 97:
					src.FailWatches(1, randomStreamFault(rng))
				default:
					src.FailLists(1, randomRequestError(rng))
				}
			}
			sink.waitConverged(t, src)
			sink.checkModel(t, src)
		})
	}
}

func pick(rng *rand.Rand, set map[string]bool) string {
	n := rng.IntN(len(set))
	for k := range set {
		if n == 0 {
			return k
		}
		n--
	}
	return ""
}

func randomStreamFault(rng *rand.Rand) fakesource.Fault {
	switch rng.IntN(5) {
	case 0:
		return fakesource.Fault{Err: fakesource.ConnectionRefused()}
	case 1:
		return fakesource.Fault{Err: fakesource.TooManyRequests(1)}
	case 2:
		return fakesource.Fault{AfterEvents: rng.IntN(5), End: fakesource.EndDecodeError}
	case 3:
		return fakesource.Fault{AfterEvents: rng.IntN(5), End: fakesource.EndExpired}
	}
	return fakesource.Fault{AfterEvents: rng.IntN(5), End: fakesource.EndClose}
}

func randomRequestError(rng *rand.Rand) error {
	switch rng.IntN(3) {
	case 0:
		return fakesource.InternalError("etcd leader changed")
	case 1:
		return fakesource.TooManyRequests(2)
	}
	return fakesource.ConnectionRefused()
}
