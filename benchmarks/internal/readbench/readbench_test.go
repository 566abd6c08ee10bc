package readbench

import (
	"bytes"
	"context"
	"math"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/goleak"

	"github.com/warmcache/warmcache/benchmarks/internal/storebench"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// Every store answers every read with the same objects, both listers
// agree, and the table has a row per read and unit.
func TestMeasureEveryStore(t *testing.T) {
	const n = 2000
	c, err := storebench.NewCorpus(n)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var results []Result
	for _, impl := range storebench.Impls {
		reg := prometheus.NewRegistry()
		st, err := storebench.Open(ctx, impl, storebench.Options{Dir: t.TempDir(), Registerer: reg})
		if err != nil {
			t.Fatal(err)
		}
		if err := storebench.Load(ctx, st, c, n, nopTimer{}); err != nil {
			t.Fatal(err)
		}
		r, err := Measure(ctx, st, c, n, Options{Reps: 1, GetSamples: 100, Reconciles: 50, Gatherer: reg})
		if cerr := st.Close(); cerr != nil {
			t.Fatal(cerr)
		}
		if err != nil {
			t.Fatalf("%s: %v", impl, err)
		}
		results = append(results, r)
	}
	want := make([]int, 4)
	for i := range n {
		p, err := c.Decode(i)
		if err != nil {
			t.Fatal(err)
		}
		want[0]++
		app := p.Labels["app.kubernetes.io/name"]
		if app == "app-5" {
			want[1]++
		}
		if p.Namespace == "ns-007" {
			want[2]++
			if app == "app-7" {
				want[3]++
			}
		}
	}
	if want[2] == 0 || want[1] == 0 {
		t.Fatalf("the corpus selects nothing: %v", want)
	}
	for _, r := range results {
		if len(r.Reads) != 8 {
			t.Fatalf("%s: %d reads, want 8", r.Impl, len(r.Reads))
		}
		for i, read := range r.Reads {
			if read.Objects != want[i%4] {
				t.Errorf("%s: %s returned %d objects, want %d", r.Impl, read.Name, read.Objects, want[i%4])
			}
			if read.Time <= 0 {
				t.Errorf("%s: %s took no time", r.Impl, read.Name)
			}
		}
		if r.GetUniform.Len() != 100 || r.GetZipf.Len() != 100 {
			t.Errorf("%s: %d and %d lookups, want 100", r.Impl, r.GetUniform.Len(), r.GetZipf.Len())
		}
		if r.Reconcile.Len() != 50 {
			t.Errorf("%s: %d reconciles, want 50", r.Impl, r.Reconcile.Len())
		}
		// A reconcile reads the object its event just wrote: the bolt
		// store's hot tier holds it.
		if wantRate := r.Impl == storebench.Bolt; wantRate != !math.IsNaN(r.HotHitRate) || wantRate && r.HotHitRate != 1 {
			t.Errorf("%s: hot tier hit rate %v, want 1 for bolt and none for the others", r.Impl, r.HotHitRate)
		}
	}
	var b bytes.Buffer
	if err := Table("t", results).Write(&b); err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(b.String(), " heap MB "); got != 8 {
		t.Errorf("table has %d heap rows, want 8:\n%s", got, b.String())
	}
}

type nopTimer struct{}

func (nopTimer) StartTimer() {}
func (nopTimer) StopTimer()  {}
