package cli

import (
	"context"
	"io"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/tools/cache"
)

// liveHeap samples the live heap (as marked by the last garbage
// collection) while a command runs: if a command held every object, the
// live heap at the collections during the run would grow with their number.
type liveHeap struct {
	stop chan struct{}
	done chan struct{}
	peak uint64
}

var liveHeapMetric = []metrics.Sample{{Name: "/gc/heap/live:bytes"}}

func currentLive() uint64 {
	s := append([]metrics.Sample(nil), liveHeapMetric...)
	metrics.Read(s)
	return s[0].Value.Uint64()
}

func watchLiveHeap() *liveHeap {
	h := &liveHeap{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(h.done)
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		for {
			h.peak = max(h.peak, currentLive())
			select {
			case <-h.stop:
				return
			case <-tick.C:
			}
		}
	}()
	return h
}

// Stop ends the sampling and returns the peak in bytes.
func (h *liveHeap) Stop() uint64 {
	close(h.stop)
	<-h.done
	h.peak = max(h.peak, currentLive())
	return h.peak
}

// streamingCommands are the commands that must stream.
func streamingCommands(path string) [][]string {
	return [][]string{
		{"list", path, "pods", "-A", "-o", "json"},
		{"list", path, "pods", "-A"},
		{"list", path, "pods", "-A", "-o", "custom-columns=NAME:.metadata.name,NAMESPACE:.metadata.namespace,RV:.metadata.resourceVersion"},
		// Sorting holds a key and a value per object, not the objects.
		{"list", path, "pods", "-A", "--sort-by", ".metadata.name", "-o", "name"},
		{"export", path, "pods", "-o", "json"},
		{"verify", path},
	}
}

// padBytes is the size of an annotation that makes the pods of the heap
// test weigh on the heap while staying cheap to print.
const padBytes = 8 << 10

// peakLiveGrowth runs args with the collector running often (GOGC=10), so
// that the live heap it marks tracks what the command holds, and returns
// how much the live heap grew at most. Stdout is discarded: a buffer would
// hold the output.
func peakLiveGrowth(t testing.TB, args []string) int64 {
	t.Helper()
	defer debug.SetGCPercent(debug.SetGCPercent(10))
	runtime.GC()
	base := currentLive()
	h := watchLiveHeap()
	var stderr safeBuffer
	code := Run(context.Background(), Env{Stdout: io.Discard, Stderr: &stderr}, args)
	peak := h.Stop()
	if code != ExitOK {
		t.Fatalf("%q: exit %d: %s", args, code, stderr.String())
	}
	return int64(peak) - int64(base)
}

// TestStreamingKeepsHeapFlat checks that list, export and verify do not
// hold the objects of a resource: their peak live heap stays far below
// what the decoded objects weigh together.
func TestStreamingKeepsHeapFlat(t *testing.T) {
	const pods = 3000
	path := filepath.Join(t.TempDir(), "big.db")
	pad := strings.Repeat("x", padBytes)
	writeFixture(t, path, fixtureOptions{pods: pods, podsOnly: true, podIndexes: cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc},
		mutatePods: func(p *corev1.Pod) {
			*p = corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: p.Name, ResourceVersion: p.ResourceVersion,
				Annotations: map[string]string{"pad": pad}}}
		}})
	all := int64(pods * padBytes) // 23 MB, twelve times a scan chunk
	for _, args := range streamingCommands(path) {
		t.Run(strings.Join(append([]string{args[0]}, args[2:]...), " "), func(t *testing.T) {
			grown := peakLiveGrowth(t, args)
			t.Logf("live heap grew by %.1f MB at most (all objects: %d MB)", float64(grown)/(1<<20), all>>20)
			if grown > all/2 {
				t.Errorf("live heap grew by %d bytes, more than half the %d bytes of all objects: the command holds them", grown, all)
			}
		})
	}
}

// benchFile is a file of BENCH_PODS podgen pods (default 100000), written
// once per process for the benchmarks and removed by TestMain.
var benchFile = struct {
	once sync.Once
	dir  string
	path string
	err  error
}{}

func benchPods() int {
	if n, err := strconv.Atoi(os.Getenv("SNAPSHOT_BENCH_PODS")); err == nil && n > 0 {
		return n
	}
	return 100000
}

func bigFile(b *testing.B) string {
	benchFile.once.Do(func() {
		benchFile.dir, benchFile.err = os.MkdirTemp("", "snapshot-bench-")
		if benchFile.err != nil {
			return
		}
		benchFile.path = filepath.Join(benchFile.dir, "big.db")
		start := time.Now()
		writeFixture(b, benchFile.path, fixtureOptions{pods: benchPods(), podsOnly: true})
		fi, err := os.Stat(benchFile.path)
		if err != nil {
			benchFile.err = err
			return
		}
		b.Logf("wrote %d pods, %d MB, in %v", benchPods(), fi.Size()>>20, time.Since(start).Round(time.Second))
	})
	if benchFile.err != nil {
		b.Fatal(benchFile.err)
	}
	return benchFile.path
}

func removeBenchFile() {
	if benchFile.dir != "" {
		_ = os.RemoveAll(benchFile.dir)
	}
}

// BenchmarkStreaming runs list, export and verify on a file of
// SNAPSHOT_BENCH_PODS podgen pods (default 100000): ns/op and objects/s
// are the time of a normal run; live-MB is the peak growth of the live heap
// in one extra run with the collector running often (GOGC=10), so that the
// heap it marks tracks what the command holds.
//
//	go test ./cmd/snapshot/internal/cli -run '^$' -bench Streaming -benchtime 1x
func BenchmarkStreaming(b *testing.B) {
	path := bigFile(b)
	for _, args := range streamingCommands(path) {
		b.Run(strings.Join(append([]string{args[0]}, args[2:]...), "_"), func(b *testing.B) {
			peak := peakLiveGrowth(b, args)
			for b.Loop() {
				var stderr safeBuffer
				if code := Run(context.Background(), Env{Stdout: io.Discard, Stderr: &stderr}, args); code != ExitOK {
					b.Fatalf("exit %d: %s", code, stderr.String())
				}
			}
			b.ReportMetric(float64(peak)/(1<<20), "live-MB")
			b.ReportMetric(float64(benchPods())*float64(b.N)/b.Elapsed().Seconds(), "objects/s")
		})
	}
}

// BenchmarkInfo measures info on the benchmark file (its answer comes from
// recorded counts and bucket statistics, not from reading the objects).
//
//	SNAPSHOT_BENCH_PODS=200000 go test ./cmd/snapshot/internal/cli -run '^$' -bench Info -benchtime 5x
func BenchmarkInfo(b *testing.B) {
	path := bigFile(b)
	fi, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		var stderr safeBuffer
		if code := Run(context.Background(), Env{Stdout: io.Discard, Stderr: &stderr}, []string{"info", path}); code != ExitOK {
			b.Fatalf("exit %d: %s", code, stderr.String())
		}
	}
	b.ReportMetric(float64(fi.Size())/(1<<20), "file-MB")
}

// safeBuffer is a strings.Builder safe for the progress bar's writes.
type safeBuffer struct {
	mu sync.Mutex
	b  []byte
}

func (s *safeBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.b = append(s.b, p...)
	return len(p), nil
}

func (s *safeBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return string(s.b)
}
