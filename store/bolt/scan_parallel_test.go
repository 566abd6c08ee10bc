package bolt

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	bbolt "go.etcd.io/bbolt"
	apiequality "k8s.io/apimachinery/pkg/api/equality"

	"github.com/warmcache/warmcache/internal/podgen"
	"github.com/warmcache/warmcache/store"
	"github.com/warmcache/warmcache/store/bolt/internal/headroom"
	"github.com/warmcache/warmcache/store/bolt/internal/layout"
)

// *Store implements informer.ParallelScanner (informer imports this
// package, so the interface is spelled out here).
var _ interface {
	ScanParallel(ctx context.Context, n int, fn store.ScanFunc) error
} = (*Store)(nil)

// scanned is what a scan delivered, in order.
type scanned struct {
	keys []string
	objs []interface{}
}

func (r *scanned) fn(key string, obj interface{}) error {
	r.keys = append(r.keys, key)
	r.objs = append(r.objs, obj)
	return nil
}

// podgenStore returns a store holding n podgen pods.
func podgenStore(t testing.TB, n int) *Store {
	t.Helper()
	db := openDB(t, tempPath(t), Options{Sync: UnsafeNoSync})
	s := openPods(t, db, namespaceIndexers())
	list := make([]interface{}, n)
	for i, p := range podgen.Pods(n) {
		list[i] = p
	}
	must(t, s.Replace(list, fmt.Sprint(n)))
	return s
}

// TestScanParallelMatchesScan checks that ScanParallel delivers the same
// keys and objects as Scan, in the same order, for several parallelisms.
func TestScanParallelMatchesScan(t *testing.T) {
	const pods = 2000 // about eight chunks
	s := podgenStore(t, pods)
	ctx := context.Background()
	var want scanned
	must(t, s.Scan(ctx, want.fn))
	if len(want.keys) != pods {
		t.Fatalf("Scan delivered %d objects, want %d", len(want.keys), pods)
	}
	for _, n := range []int{1, 2, 4, 100} {
		t.Run(fmt.Sprintf("n=%d", n), func(t *testing.T) {
			var got scanned
			must(t, s.ScanParallel(ctx, n, got.fn))
			if len(got.keys) != len(want.keys) {
				t.Fatalf("ScanParallel delivered %d objects, want %d", len(got.keys), len(want.keys))
			}
			for i := range want.keys {
				if got.keys[i] != want.keys[i] {
					t.Fatalf("key %d = %q, want %q", i, got.keys[i], want.keys[i])
				}
				if !apiequality.Semantic.DeepEqual(got.objs[i], want.objs[i]) {
					t.Fatalf("object %d (%s) differs from Scan's", i, want.keys[i])
				}
			}
		})
	}
}

// TestScanParallelEmpty checks a scan of an empty store.
func TestScanParallelEmpty(t *testing.T) {
	db := openDB(t, tempPath(t), Options{Sync: UnsafeNoSync})
	s := openPods(t, db, namespaceIndexers())
	calls := 0
	must(t, s.ScanParallel(context.Background(), 2, func(string, interface{}) error { calls++; return nil }))
	if calls != 0 {
		t.Errorf("fn called %d times on an empty store", calls)
	}
}

// TestScanParallelStops checks that an error of fn and a cancelled context
// stop the scan at once, and that bad arguments and a closed store return
// their errors.
func TestScanParallelStops(t *testing.T) {
	s := podgenStore(t, 1000)
	tests := []struct {
		name      string
		n         int
		stopAt    int // the call of fn that fails or cancels
		cancel    bool
		wantCalls int
		wantErr   error
	}{
		{name: "fn error in the first chunk", n: 2, stopAt: 10, wantCalls: 10, wantErr: errTest},
		{name: "fn error in a later chunk", n: 4, stopAt: 700, wantCalls: 700, wantErr: errTest},
		{name: "cancel", n: 2, stopAt: 300, cancel: true, wantCalls: 300, wantErr: context.Canceled},
		{name: "cancelled before", n: 2, stopAt: 0, cancel: true, wantCalls: 0, wantErr: context.Canceled},
		{name: "n zero", n: 0, wantCalls: 0, wantErr: ErrInvalidOptions},
		{name: "n negative", n: -1, wantCalls: 0, wantErr: ErrInvalidOptions},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tc.cancel && tc.stopAt == 0 {
				cancel()
			}
			calls := 0
			err := s.ScanParallel(ctx, tc.n, func(string, interface{}) error {
				calls++
				if calls == tc.stopAt {
					if tc.cancel {
						cancel()
						return nil
					}
					return errTest
				}
				return nil
			})
			if !errors.Is(err, tc.wantErr) {
				t.Errorf("ScanParallel = %v, want %v", err, tc.wantErr)
			}
			if calls != tc.wantCalls {
				t.Errorf("fn called %d times, want %d", calls, tc.wantCalls)
			}
		})
	}

	t.Run("closed", func(t *testing.T) {
		db := openDB(t, tempPath(t), Options{Sync: UnsafeNoSync})
		c := openPods(t, db, namespaceIndexers())
		must(t, db.Close())
		if err := c.ScanParallel(context.Background(), 2, func(string, interface{}) error { return nil }); !errors.Is(err, ErrClosed) {
			t.Errorf("ScanParallel after Close = %v, want ErrClosed", err)
		}
	})
}

// TestScanParallelCorruptItem checks that an item that does not decode
// does what it does in Scan: the objects before its chunk are delivered,
// the scan stops with ErrCorrupt naming the item, OnCorruption is called
// and the resource is marked incomplete.
func TestScanParallelCorruptItem(t *testing.T) {
	const pods = 700 // three chunks; the bad item is in the second
	bad := fmt.Sprintf("ns/p%04d", 400)
	for _, n := range []int{1, 2, 4} {
		t.Run(fmt.Sprintf("n=%d", n), func(t *testing.T) {
			ctx := context.Background()
			path := damagedPath(t)
			db, err := Open(ctx, path, Options{Sync: UnsafeNoSync})
			must(t, err)
			s := openPods(t, db, namespaceIndexers())
			list := make([]interface{}, pods)
			for i := range list {
				list[i] = mkPod("ns", fmt.Sprintf("p%04d", i), "1")
			}
			must(t, s.Replace(list, "1"))
			must(t, db.Close())
			rawUpdate(t, path, func(tx *bbolt.Tx) error {
				_, g := rawLive(t, tx)
				setEnvelope(t, g, bad, layout.EncodeEnvelope(bad, "1", "", []byte("not protobuf")))
				return nil
			})

			db = openDB(t, path, Options{Sync: UnsafeNoSync})
			var reported []error
			s, err = db.Resource(ctx, ResourceOptions{Identity: podsID, Codec: podCodec, Indexers: namespaceIndexers(),
				OnCorruption: func(err error) { reported = append(reported, err) }})
			must(t, err)

			var got scanned
			err = s.ScanParallel(ctx, n, got.fn)
			if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), bad) {
				t.Errorf("ScanParallel = %v, want ErrCorrupt naming %s", err, bad)
			}
			if len(reported) != 1 || !errors.Is(reported[0], ErrCorrupt) {
				t.Errorf("OnCorruption got %v, want one ErrCorrupt", reported)
			}
			if st := mustState(t, s); st.Complete {
				t.Errorf("state after a corrupt object = %+v, want incomplete", st)
			}
			var want scanned
			if err := s.Scan(ctx, want.fn); !errors.Is(err, ErrCorrupt) {
				t.Errorf("Scan = %v, want ErrCorrupt", err)
			}
			if strings.Join(got.keys, ",") != strings.Join(want.keys, ",") {
				t.Errorf("ScanParallel delivered %d keys, Scan %d; want the same", len(got.keys), len(want.keys))
			}
			if len(got.keys) != scanChunk {
				t.Errorf("delivered %d objects, want the first chunk (%d)", len(got.keys), scanChunk)
			}
		})
	}
}

// BenchmarkScanParallel compares Scan and ScanParallel over benchPods
// podgen pods, reporting the wall and CPU time per object.
//
//	go test -run '^$' -bench ScanParallel -benchmem ./store/bolt/
func BenchmarkScanParallel(b *testing.B) {
	s := podgenStore(b, benchPods)
	ctx := context.Background()
	scans := []struct {
		name string
		scan func(fn store.ScanFunc) error
	}{
		{"Scan", func(fn store.ScanFunc) error { return s.Scan(ctx, fn) }},
		{"ScanParallel-1", func(fn store.ScanFunc) error { return s.ScanParallel(ctx, 1, fn) }},
		{"ScanParallel-2", func(fn store.ScanFunc) error { return s.ScanParallel(ctx, 2, fn) }},
	}
	for _, sc := range scans {
		b.Run(sc.name, func(b *testing.B) {
			cpu := cpuTime()
			start := time.Now()
			for b.Loop() {
				n := 0
				if err := sc.scan(func(string, interface{}) error { n++; return nil }); err != nil || n != benchPods {
					b.Fatalf("scan: %d objects, %v", n, err)
				}
			}
			objs := float64(b.N) * benchPods
			b.ReportMetric(float64(time.Since(start).Nanoseconds())/objs, "ns/obj")
			b.ReportMetric(float64((cpuTime()-cpu).Nanoseconds())/objs, "cpu-ns/obj")
		})
	}
}

// TestScanParallelCloseDuringScan checks that fn runs outside any read
// transaction: closing the file from fn (bbolt's Close waits for open
// transactions) neither deadlocks nor loses the error, and the scan
// returns ErrClosed once the chunks already read are delivered.
func TestScanParallelCloseDuringScan(t *testing.T) {
	db := openDB(t, tempPath(t), Options{Sync: UnsafeNoSync})
	s := openPods(t, db, namespaceIndexers())
	list := make([]interface{}, 10*scanChunk) // more than the chunks read ahead
	for i := range list {
		list[i] = mkPod("ns", fmt.Sprintf("p%04d", i), "1")
	}
	must(t, s.Replace(list, "1"))
	calls := 0
	err := s.ScanParallel(context.Background(), 2, func(string, interface{}) error {
		calls++
		if calls == 1 {
			must(t, db.Close())
		}
		return nil
	})
	if !errors.Is(err, ErrClosed) {
		t.Errorf("ScanParallel = %v, want ErrClosed", err)
	}
	if calls < 1 || calls >= len(list) {
		t.Errorf("fn called %d times, want at least once and fewer than %d", calls, len(list))
	}
}

// TestScanParallelLendsHeadroom checks that a ScanParallel lends the
// collector Options.ReplayHeadroom, 1 KiB per object up to it, while it
// runs, and gives it back when it returns; and nothing for a resource of
// fewer than replayHeadroomFrom objects. It must not run in parallel:
// the ballast is the process's.
func TestScanParallelLendsHeadroom(t *testing.T) {
	const pods = 300
	defer func(from int64) { replayHeadroomFrom = from }(replayHeadroomFrom)
	for _, tc := range []struct {
		name     string
		from     int64 // replayHeadroomFrom
		headroom *int64
		want     int64
	}{
		{"default", pods, nil, pods * replayHeadroomPerObject},
		{"capped", pods, ptrTo(int64(100 << 10)), 100 << 10},
		{"none", pods, ptrTo(int64(0)), 0},
		{"too few objects", pods + 1, nil, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			replayHeadroomFrom = tc.from
			db := openDB(t, tempPath(t), Options{Sync: UnsafeNoSync, HotBytes: ptrTo(int64(0)), ReplayHeadroom: tc.headroom})
			s := openPods(t, db, namespaceIndexers())
			list := make([]interface{}, pods)
			for i, p := range podgen.Pods(pods) {
				list[i] = p
			}
			must(t, s.Replace(list, "1"))
			n := 0
			must(t, s.ScanParallel(context.Background(), 2, func(string, interface{}) error {
				if got := headroom.Size(); got != tc.want {
					return fmt.Errorf("headroom during the scan's object %d: %d bytes, want %d", n, got, tc.want)
				}
				n++
				return nil
			}))
			if n != pods {
				t.Fatalf("scanned %d objects, want %d", n, pods)
			}
			if got := headroom.Size(); got != 0 {
				t.Fatalf("headroom after the scan: %d bytes, want none", got)
			}
		})
	}
}

func TestOpenRejectsNegativeReplayHeadroom(t *testing.T) {
	_, err := Open(context.Background(), tempPath(t), Options{ReplayHeadroom: ptrTo(int64(-1))})
	if !errors.Is(err, ErrInvalidOptions) {
		t.Fatalf("Open with ReplayHeadroom -1: %v, want ErrInvalidOptions", err)
	}
}
