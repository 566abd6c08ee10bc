package democtl

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"go.uber.org/goleak"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"github.com/warmcache/warmcache/internal/eventlog"

	"github.com/warmcache/warmcache/internal/mutationtest"
	"github.com/warmcache/warmcache/internal/testkit"
)

func TestMain(m *testing.M) {
	mutationtest.Enable()
	goleak.VerifyTestMain(m)
}

func TestConfigValidation(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
		want error
	}{
		{"no REST config", Config{}, ErrInvalidConfig},
		{"negative workers", Config{RESTConfig: &rest.Config{}, Workers: -1}, ErrInvalidConfig},
		{"negative sample interval", Config{RESTConfig: &rest.Config{}, HeapSampleInterval: -1}, ErrInvalidConfig},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := Run(t.Context(), tc.cfg); !errors.Is(err, tc.want) {
				t.Errorf("Run = %v, want %v", err, tc.want)
			}
		})
	}
	got, err := Config{RESTConfig: &rest.Config{}}.withDefaults()
	if err != nil || got.Workers != DefaultWorkers || got.HeapSampleInterval != DefaultHeapSampleInterval {
		t.Errorf("defaults: %+v, %v", got, err)
	}
}

// TestRunWithoutAPIServerWritesStats: no apiserver (nothing listens on
// port 1) means no sync; Run returns ErrSync when its context ends and still
// writes the stats file, error included.
func TestRunWithoutAPIServerWritesStats(t *testing.T) {
	stats := filepath.Join(t.TempDir(), "stats.json")
	// The deadline ends a run that can never sync.
	ctx, cancel := context.WithTimeout(klog.NewContext(t.Context(), logr.Discard()), 300*time.Millisecond)
	defer cancel()
	cfg := Config{RESTConfig: &rest.Config{Host: "http://127.0.0.1:1"}, StatsFile: stats, CacheFile: filepath.Join(t.TempDir(), "c.db")}
	_, err := Run(ctx, cfg)
	if !errors.Is(err, ErrSync) {
		t.Fatalf("Run = %v, want ErrSync", err)
	}
	st, rerr := ReadStats(stats)
	if rerr != nil {
		t.Fatal(rerr)
	}
	if st.Error == "" || st.SyncedSeconds != 0 || st.WarmStart {
		t.Errorf("stats of a run that never synced: %+v", st)
	}
}

func TestStatsRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "stats.json")
	want := Stats{WarmStart: true, SyncedSeconds: 1.5, Events: EventCounts{InitialAdds: 3, Updates: 2, Deletes: 1, DeletesFinalStateUnknown: 1},
		ListRequests: 4, BytesReceived: 1234, PeakHeapBytes: 99, SteadyHeapBytes: 42}
	if err := writeStats(path, want); err != nil {
		t.Fatal(err)
	}
	got, err := ReadStats(path)
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Errorf("ReadStats = %+v, want %+v", got, want)
	}
	if got.Events.Total() != 6 {
		t.Errorf("Total = %d, want 6", got.Events.Total())
	}
	if _, err := ReadStats(filepath.Join(t.TempDir(), "missing")); !errors.Is(err, ErrStats) {
		t.Errorf("ReadStats of a missing file = %v, want ErrStats", err)
	}
	if err := writeStats(filepath.Join(t.TempDir(), "no", "dir", "s.json"), want); !errors.Is(err, ErrStats) {
		t.Errorf("writeStats into a missing directory = %v, want ErrStats", err)
	}
}

type bodyServer struct{ body string }

func (s bodyServer) RoundTrip(*http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: 200, Body: io.NopCloser(strings.NewReader(s.body))}, nil
}

func TestCountingTransport(t *testing.T) {
	var rt countingTransport
	rt.next = bodyServer{body: strings.Repeat("x", 1000)}
	rt.n = new(atomic.Int64)
	for range 3 {
		req, _ := http.NewRequest(http.MethodGet, "http://example.invalid/", nil)
		resp, err := rt.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(io.Discard, resp.Body); err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	if got := rt.n.Load(); got != 3000 {
		t.Errorf("counted %d bytes, want 3000", got)
	}
}

// TestHandler: every event is counted by type, logged as a JSON line and
// its key enqueued once.
func TestHandler(t *testing.T) {
	var buf bytes.Buffer
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]())
	defer q.ShutDown()
	var counts counters
	h := &handler{queue: q, log: eventlog.New[Event](klog.Background(), &buf), counts: &counts, logger: klog.Background()}
	h.OnAdd(testkit.Pod("a", "1"), true)
	h.OnAdd(testkit.Pod("b", "2"), false)
	h.OnUpdate(testkit.Pod("a", "1"), testkit.Pod("a", "3"))
	h.OnDelete(testkit.Pod("b", "2"))
	h.OnDelete(cache.DeletedFinalStateUnknown{Key: "ns/c", Obj: testkit.Pod("c", "4")})

	want := EventCounts{InitialAdds: 1, Adds: 1, Updates: 1, Deletes: 2, DeletesFinalStateUnknown: 1}
	if got := counts.snapshot(); got != want {
		t.Errorf("counts %+v, want %+v", got, want)
	}
	if q.Len() != 3 {
		t.Errorf("queue holds %d keys, want 3 (ns/a, ns/b, ns/c)", q.Len())
	}
	wantLines := []Event{
		{Type: "add", Key: "ns/a", ResourceVersion: "1", Initial: true},
		{Type: "add", Key: "ns/b", ResourceVersion: "2"},
		{Type: "update", Key: "ns/a", ResourceVersion: "3", OldResourceVersion: "1"},
		{Type: "delete", Key: "ns/b", ResourceVersion: "2"},
		{Type: "delete", Key: "ns/c", ResourceVersion: "4", FinalStateUnknown: true},
	}
	dec := json.NewDecoder(&buf)
	for i, w := range wantLines {
		var e Event
		if err := dec.Decode(&e); err != nil {
			t.Fatalf("line %d: %v", i, err)
		}
		if e != w {
			t.Errorf("line %d = %+v, want %+v", i, e, w)
		}
	}
}

func TestMainUsage(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want int
	}{
		{"unknown flag", []string{"--no-such-flag"}, ExitUsage},
		{"positional argument", []string{"extra"}, ExitUsage},
		{"missing kubeconfig", []string{"--kubeconfig", filepath.Join(t.TempDir(), "missing")}, ExitUsage},
		{"help", []string{"-h"}, ExitOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if got := Main(t.Context(), tc.args, &stdout, &stderr); got != tc.want {
				t.Errorf("Main(%q) = %d, want %d; stderr:\n%s", tc.args, got, tc.want, stderr.String())
			}
		})
	}
}
