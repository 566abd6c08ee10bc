package cli

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"k8s.io/client-go/tools/cache"
)

// heapProbe is a command's Stdout that measures the live heap while the
// command writes: at its first write and then every probeBytes or
// probeWrites, it runs a full collection and reads the heap it marked. The
// command's goroutine is blocked in Write meanwhile, so the only memory
// allocated during the collection is what the command's helpers (a scan's
// decoders) have in flight, which its pipeline bounds: the peak is what the
// command holds, not what a collection slowed by a loaded machine counted
// as live because it was allocated while marking, as a sampler of the
// background collections does.
type heapProbe struct {
	mu             sync.Mutex
	peak           uint64
	probes         int
	writes, unread int
}

const (
	probeBytes  = 256 << 10
	probeWrites = 256
)

func currentLive() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// collectedLive runs a full collection and returns the live heap it marked.
func collectedLive() uint64 {
	runtime.GC()
	return currentLive()
}

func (p *heapProbe) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.writes++
	p.unread += len(b)
	if p.probes == 0 || p.unread >= probeBytes || p.writes%probeWrites == 0 {
		p.peak = max(p.peak, collectedLive())
		p.probes++
		p.unread = 0
	}
	return len(b), nil
}

// streamingCommands are the commands that must stream.
func streamingCommands(path string) [][]string {
	return [][]string{
		{"list", path, "pods", "-A", "-o", "json"},
		{"list", path, "pods", "-A"},
		{"list", path, "pods", "-A", "-o", "custom-columns=NAME:.metadata.name,NAMESPACE:.metadata.namespace,RV:.metadata.resourceVersion"},
		// Sorting holds a row, a key and a value per object, not the
		// objects.
		{"list", path, "pods", "-A", "--sort-by", ".metadata.name", "-o", "name"},
		{"export", path, "pods", "-o", "json"},
		{"verify", path},
	}
}

// padBytes is the size of an annotation that makes the pods of the heap
// test weigh on the heap while staying cheap to print.
const padBytes = 8 << 10

// peakLiveGrowth runs args with a heapProbe as Stdout and returns how
// much the live heap grew at most while the command wrote, over the live
// heap before it started. The output is discarded: a buffer would hold it.
func peakLiveGrowth(t testing.TB, args []string) int64 {
	t.Helper()
	base := collectedLive()
	probe := &heapProbe{}
	var stderr safeBuffer
	code := Run(context.Background(), Env{Stdout: probe, Stderr: &stderr}, args)
	if code != ExitOK {
		t.Fatalf("%q: exit %d: %s", args, code, stderr.String())
	}
	if probe.probes == 0 {
		t.Fatalf("%q wrote nothing: the heap was never measured", args)
	}
	return int64(probe.peak) - int64(base)
}

// TestStreamingKeepsHeapFlat checks that list, export and verify do not
// hold the objects of a resource: their peak live heap stays far below
// what the decoded objects weigh together.
func TestStreamingKeepsHeapFlat(t *testing.T) {
	// Enough objects that a pipeline's bounded in flight (a scan chunk of
	// 256, the renderers' 2×GOMAXPROCS batches of 64 and their buffers,
	// 10-14 MB of these pods under load) stays well under half of them.
	const pods = 6000
	path := filepath.Join(t.TempDir(), "big.db")
	pad := strings.Repeat("x", padBytes)
	writeFixture(t, path, fixtureOptions{pods: pods, podsOnly: true, podIndexes: cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc},
		mutatePods: func(p *corev1.Pod) {
			*p = corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: p.Name, ResourceVersion: p.ResourceVersion,
				Annotations: map[string]string{"pad": pad}}}
		}})
	all := int64(pods * padBytes) // 47 MB, 23 times a scan chunk
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
// in one extra run, measured by full collections while the command writes
// (heapProbe).
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
