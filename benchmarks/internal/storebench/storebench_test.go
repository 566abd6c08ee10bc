package storebench

import (
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"go.uber.org/goleak"

	"github.com/warmcache/warmcache/benchmarks/internal/measure"
	"github.com/warmcache/warmcache/internal/podgen"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// testPods is the corpus size of the tests: a few batches of testBatch and
// more pods than podgen has namespaces.
const (
	testPods  = 230
	testBatch = 50
)

var testCorpus = func() *Corpus {
	c, err := NewCorpus(testPods)
	if err != nil {
		panic(err)
	}
	return c
}()

func TestCorpusDecodesPodgenPods(t *testing.T) {
	for _, i := range []int{0, 1, testPods - 1} {
		got, err := testCorpus.Decode(i)
		if err != nil {
			t.Fatal(err)
		}
		want := podgen.Pod(i)
		// Protobuf does not carry TypeMeta; informers' objects lack it too.
		want.TypeMeta = metav1.TypeMeta{}
		if !apiequality.Semantic.DeepEqual(got, want) {
			t.Errorf("pod %d decoded differs from podgen's", i)
		}
		if key := want.Namespace + "/" + want.Name; testCorpus.Key(i) != key {
			t.Errorf("Key(%d) = %q, want %q", i, testCorpus.Key(i), key)
		}
	}
	if testCorpus.Len() != testPods || testCorpus.Bytes() < testPods*1000 {
		t.Errorf("Len %d Bytes %d for %d pods", testCorpus.Len(), testCorpus.Bytes(), testPods)
	}
}

func TestCorpusDecodeReturnsNewObjects(t *testing.T) {
	a, err := testCorpus.Decode(3)
	if err != nil {
		t.Fatal(err)
	}
	b, err := testCorpus.Decode(3)
	if err != nil {
		t.Fatal(err)
	}
	a.Labels["tier"] = "changed"
	a.Spec.Containers[0].Image = "changed"
	if b.Labels["tier"] == "changed" || b.Spec.Containers[0].Image == "changed" {
		t.Error("two decodes of the same pod share memory")
	}
}

func TestCorpusUpdated(t *testing.T) {
	p, err := testCorpus.Updated(5, 7, "999")
	if err != nil {
		t.Fatal(err)
	}
	if p.ResourceVersion != "999" || p.Annotations[GenerationAnnotation] != "7" {
		t.Errorf("Updated: rv %q generation %q", p.ResourceVersion, p.Annotations[GenerationAnnotation])
	}
	if p.Name != podgen.Pod(5).Name {
		t.Errorf("Updated(5) is pod %s", p.Name)
	}
}

func TestCorpusErrors(t *testing.T) {
	if _, err := NewCorpus(0); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("NewCorpus(0) = %v, want ErrInvalidArgument", err)
	}
	for _, i := range []int{-1, testPods} {
		if _, err := testCorpus.Decode(i); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("Decode(%d) = %v, want ErrInvalidArgument", i, err)
		}
	}
}

func TestOpenErrors(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name string
		impl string
		opts Options
		want error
	}{
		{"unknown implementation", "redis", Options{}, ErrUnknownImpl},
		{"bolt without a directory", Bolt, Options{}, ErrInvalidArgument},
		{"negative batch", Memory, Options{BatchSize: -1}, ErrInvalidArgument},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tg, err := Open(ctx, tt.impl, tt.opts)
			if !errors.Is(err, tt.want) {
				t.Errorf("Open = %v, want %v", err, tt.want)
			}
			if tg != nil {
				t.Errorf("Open returned a target with an error")
			}
		})
	}
}

// nop is a Timer for tests.
type nop struct{ starts, stops int }

func (n *nop) StartTimer() { n.starts++ }
func (n *nop) StopTimer()  { n.stops++ }

func openTest(t *testing.T, impl string) *Target {
	t.Helper()
	tg, err := Open(context.Background(), impl, Options{Dir: t.TempDir(), BatchSize: testBatch})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := tg.Close(); err != nil {
			t.Error(err)
		}
	})
	return tg
}

func generationOf(t *testing.T, obj interface{}) string {
	t.Helper()
	p, ok := obj.(*corev1.Pod)
	if !ok {
		t.Fatalf("stored object is a %T", obj)
	}
	return p.Annotations[GenerationAnnotation]
}

func TestOperationsOnEveryImpl(t *testing.T) {
	ctx := context.Background()
	for _, impl := range Impls {
		t.Run(impl, func(t *testing.T) {
			tg := openTest(t, impl)
			tm := &nop{}
			if err := Load(ctx, tg, testCorpus, testPods, tm); err != nil {
				t.Fatal(err)
			}
			// One write per batch, timed.
			if want := (testPods + testBatch - 1) / testBatch; tm.starts != want || tm.stops != want {
				t.Errorf("load timed %d/%d writes, want %d", tm.starts, tm.stops, want)
			}
			if keys := tg.Indexer.ListKeys(); len(keys) != testPods {
				t.Fatalf("%d keys after the load, want %d", len(keys), testPods)
			}
			if rv := tg.Indexer.LastStoreSyncResourceVersion(); rv != "230" {
				t.Errorf("resourceVersion after the load %q, want 230", rv)
			}

			// Every pod updated once: all carry generation 1.
			if err := Update(ctx, tg, testCorpus, testPods, testPods, 1, &nop{}); err != nil {
				t.Fatal(err)
			}
			for _, obj := range tg.Indexer.List() {
				if g := generationOf(t, obj); g != "1" {
					t.Fatalf("pod with generation %q after updating all", g)
				}
			}

			rng := rand.New(rand.NewPCG(1, 2))
			lat := measure.NewLatencies(0)
			if err := GetByKey(tg, testCorpus, testPods, 40, rng, lat, &nop{}); err != nil {
				t.Fatal(err)
			}
			if err := ByNamespace(tg, testCorpus, testPods, 7, rng, lat, &nop{}); err != nil {
				t.Fatal(err)
			}
			if lat.Len() != 47 || lat.Percentile(100) <= 0 {
				t.Errorf("%d latencies, max %v", lat.Len(), lat.Percentile(100))
			}

			if err := Replace(ctx, tg, testCorpus, testPods-30, 2, &nop{}); err != nil {
				t.Fatal(err)
			}
			objs := tg.Indexer.List()
			if len(objs) != testPods-30 {
				t.Errorf("%d objects after replacing with %d", len(objs), testPods-30)
			}
			for _, obj := range objs {
				if g := generationOf(t, obj); g != "2" {
					t.Fatalf("pod with generation %q after the replace", g)
				}
			}
			if _, ok, err := tg.Indexer.GetByKey(testCorpus.Key(testPods - 1)); ok || err != nil {
				t.Errorf("pod dropped by the replace: exists %v, err %v", ok, err)
			}
		})
	}
}

func TestLookupsReportMissingData(t *testing.T) {
	tg := openTest(t, Memory)
	rng := rand.New(rand.NewPCG(1, 2))
	lat := measure.NewLatencies(0)
	if err := GetByKey(tg, testCorpus, testPods, 1, rng, lat, &nop{}); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Errorf("GetByKey on an empty store = %v, want not found", err)
	}
	if err := ByNamespace(tg, testCorpus, testPods, 1, rng, lat, &nop{}); err == nil {
		t.Error("ByNamespace on an empty store succeeded")
	}
	if lat.Len() != 0 {
		t.Errorf("failed lookups recorded %d latencies", lat.Len())
	}
}

func TestOperationsRejectBadArguments(t *testing.T) {
	ctx := context.Background()
	tg := openTest(t, Memory)
	rng := rand.New(rand.NewPCG(1, 2))
	lat := measure.NewLatencies(0)
	tests := []struct {
		name string
		run  func() error
	}{
		{"load more than the corpus", func() error { return Load(ctx, tg, testCorpus, testPods+1, &nop{}) }},
		{"load nothing", func() error { return Load(ctx, tg, testCorpus, 0, &nop{}) }},
		{"update generation 0", func() error { return Update(ctx, tg, testCorpus, testPods, 1, 0, &nop{}) }},
		{"update nothing", func() error { return Update(ctx, tg, testCorpus, testPods, 0, 1, &nop{}) }},
		{"no lookups", func() error { return GetByKey(tg, testCorpus, testPods, 0, rng, lat, &nop{}) }},
		{"no index lookups", func() error { return ByNamespace(tg, testCorpus, testPods, 0, rng, lat, &nop{}) }},
		{"replace generation 0", func() error { return Replace(ctx, tg, testCorpus, testPods, 0, &nop{}) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.run(); !errors.Is(err, ErrInvalidArgument) {
				t.Errorf("got %v, want ErrInvalidArgument", err)
			}
		})
	}
}

func TestCloseRemovesTheBoltFile(t *testing.T) {
	dir := t.TempDir()
	tg, err := Open(context.Background(), Bolt, Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if err := Load(context.Background(), tg, testCorpus, 10, &nop{}); err != nil {
		t.Fatal(err)
	}
	if size, err := tg.FileBytes(); err != nil || size == 0 {
		t.Errorf("FileBytes = %d, %v", size, err)
	}
	if err := tg.Close(); err != nil {
		t.Fatal(err)
	}
	if err := tg.Close(); err != nil {
		t.Errorf("second Close = %v", err)
	}
	if files, _ := filepath.Glob(filepath.Join(dir, "*")); len(files) != 0 {
		t.Errorf("files left after Close: %v", files)
	}
	if _, err := os.Stat(dir); err != nil {
		t.Errorf("Close removed the caller's directory: %v", err)
	}
}

func TestMeasureAndTable(t *testing.T) {
	ctx := context.Background()
	const n = 200
	// The hot tier keeps up to its budget of the pods written, every pod
	// at this size: the heap per pod is the store's without it.
	noHot := int64(0)
	opts := RunOptions{Options: Options{Dir: t.TempDir(), BatchSize: testBatch, BoltHotBytes: &noHot}, GetSamples: 50, IndexSamples: 5}
	var results []Result
	for _, impl := range Impls {
		r, err := Measure(ctx, impl, testCorpus, n, opts)
		if err != nil {
			t.Fatal(err)
		}
		if r.Impl != impl || r.N != n || r.AddPerSec <= 0 || r.UpdatePerSec <= 0 || r.Replace <= 0 ||
			r.Get.Len() != 50 || r.ByIndex.Len() != 5 {
			t.Errorf("%s: incomplete result %+v", impl, r)
		}
		if _, ok := measure.ProcessCPU(); ok && (r.AddCPU <= 0 || r.UpdateCPU <= 0) {
			t.Errorf("%s: CPU per pod: add %v, update %v", impl, r.AddCPU, r.UpdateCPU)
		}
		if (impl == Bolt) != (r.FilePerObject > 0) {
			t.Errorf("%s: file bytes per object %v", impl, r.FilePerObject)
		}
		results = append(results, r)
	}
	// Decoded pods weigh well over 5 KB on the heap; the bolt store keeps
	// them in its file instead.
	cg, mem, bolt := results[0].HeapPerObject, results[1].HeapPerObject, results[2].HeapPerObject
	if cg < 5000 || mem < cg/2 || mem > cg*2 {
		t.Errorf("heap per object: client-go %.0f, memory %.0f", cg, mem)
	}
	if bolt > cg/4 {
		t.Errorf("heap per object: bolt %.0f, client-go %.0f", bolt, cg)
	}

	tab := Table("t", results)
	rows := tab.Rows()
	if len(rows) != 12 {
		t.Fatalf("%d rows", len(rows))
	}
	targets := 0
	for _, r := range rows {
		if r.Target != nil {
			targets++
			if r.Target.Column != 2 {
				t.Errorf("row %s: target on column %d, want bolt's (2)", r.Metric, r.Target.Column)
			}
		}
	}
	if targets != 5 {
		t.Errorf("%d targets, want 5", targets)
	}
	if !rows[0].Met() {
		t.Errorf("bolt heap %.0f vs client-go %.0f should meet the 1/20 target", bolt, cg)
	}
	if noBolt := Table("t", results[:2]); noBolt.Rows()[0].Target != nil {
		t.Error("a table without bolt has targets")
	}
}

func TestListOrder(t *testing.T) {
	n := testCorpus.Len() - 7
	order := testCorpus.ListOrder(n)
	if len(order) != n {
		t.Fatalf("ListOrder(%d) has %d pods", n, len(order))
	}
	seen := map[int]bool{}
	for j, i := range order {
		if i < 0 || i >= n || seen[i] {
			t.Fatalf("ListOrder(%d)[%d] = %d: out of range or repeated", n, j, i)
		}
		seen[i] = true
		if j > 0 && testCorpus.Key(order[j-1]) >= testCorpus.Key(i) {
			t.Fatalf("keys out of order at %d: %q, %q", j, testCorpus.Key(order[j-1]), testCorpus.Key(i))
		}
	}
}
