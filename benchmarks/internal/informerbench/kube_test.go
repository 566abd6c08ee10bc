package informerbench

import (
	"context"
	"testing"
	"time"

	"github.com/warmcache/warmcache/benchmarks/internal/kubeserver"
)

// kubeTimeout bounds the measurement against kube-apiserver, a first build
// of its binaries included.
const kubeTimeout = 20 * time.Minute

// The measurements against a real kube-apiserver and etcd, at a tiny size:
// the pods created through the API, the churn made through it, the 410
// relists after etcd's compaction and kube-apiserver's restart, and the
// warm restarts, with the requests the apiserver received.
func TestMeasureOnKubeAPIServer(t *testing.T) {
	if testing.Short() {
		t.Skip("starts kube-apiserver and etcd; runs without -short (make test)")
	}
	const pods = 100
	ctx, cancel := context.WithTimeout(context.Background(), kubeTimeout)
	defer cancel()
	srv, err := kubeserver.Start(ctx, kubeserver.Options{Pods: pods, Workers: 4, CreateWorkers: 8, Dir: t.TempDir(), Stderr: testWriter{t}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := srv.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	opts := RunOptions{Options: Options{Dir: t.TempDir()}, Updates: 60, RelistPercents: []int{0, 10}}
	for i, impl := range []string{ClientGo, Bolt} {
		r, err := Measure(ctx, srv, impl, pods, i+1, opts)
		if err != nil {
			t.Fatalf("%s: %v", impl, err)
		}
		if rq := r.Cold.Requests; rq.WatchLists != 1 || rq.Lists != 0 {
			t.Errorf("%s: cold sync made %d LISTs and %d WatchLists, want one WatchList", impl, rq.Lists, rq.WatchLists)
		}
		// The server's CPU is read from /proc in clock ticks (10 ms): a
		// cold sync of 100 pods from the watch cache can take it less
		// than one, so only the churn's, which has 60 writes through the
		// API to count, must show.
		if r.Events.Whole == nil || r.Events.Whole.Measured != 60 || r.Events.Writes <= 0 || !r.Cold.Server.Known || r.Cold.Server.CPU < 0 ||
			!r.Events.Server.Known || r.Events.Server.CPU <= 0 {
			t.Errorf("%s: churn %+v, cold sync's server %+v", impl, r.Events, r.Cold.Server)
		}
		for j, rl := range r.Relists {
			if rl.Changed != pods*opts.RelistPercents[j]/100 || rl.Listed <= 0 || rl.Listed > rl.Duration {
				t.Errorf("%s: relist %d: %+v", impl, j, rl)
			}
		}
		if impl != Bolt {
			continue
		}
		// The warm restarts resume the watch: the resume check's LIST,
		// no WatchList, and the handler told of the caught-up pods
		// (WarmRestart checks).
		for _, w := range []*Warm{r.WarmReplay, r.WarmNoHandler} {
			if w == nil || w.Lists != 1 || w.WatchLists != 0 || w.Changed != 1 {
				t.Errorf("warm restart %+v: want one LIST, no WatchList", w)
			}
		}
	}
}

// testWriter writes progress to the test's log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Logf("%s", p)
	return len(p), nil
}
