package metrics_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/warmcache/warmcache/deltafifo"
	"github.com/warmcache/warmcache/informer"
	"github.com/warmcache/warmcache/informer/metrics"
	"github.com/warmcache/warmcache/internal/fakesource"
	"github.com/warmcache/warmcache/reflector"
	"github.com/warmcache/warmcache/store/memory"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestNewRejectsNilAndDuplicate(t *testing.T) {
	if _, err := metrics.New(nil, metrics.Options{}); !errors.Is(err, informer.ErrInvalidOptions) {
		t.Fatalf("nil registry: %v", err)
	}
	reg := prometheus.NewRegistry()
	if _, err := metrics.New(reg, metrics.Options{}); err != nil {
		t.Fatal(err)
	}
	if _, err := metrics.New(reg, metrics.Options{}); err == nil {
		t.Fatal("second Set on the same registry: no error")
	}
}

func TestInformerMetrics(t *testing.T) {
	src, err := fakesource.New(fakesource.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"a", "b", "c"} {
		if _, err := src.Add(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: n}}); err != nil {
			t.Fatal(err)
		}
	}
	reg := prometheus.NewRegistry()
	set, err := metrics.New(reg, metrics.Options{})
	if err != nil {
		t.Fatal(err)
	}
	st, err := memory.New(memory.Options{})
	if err != nil {
		t.Fatal(err)
	}
	inf, err := informer.New(src.Endpoint(corev1.SchemeGroupVersion.WithKind("Pod"), ""), &corev1.Pod{},
		informer.Options{Store: st, Name: "pods", Metrics: set.For("pods")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	done := make(chan struct{})
	go func() { defer close(done); inf.RunWithContext(ctx) }()
	if !cache.WaitFor(ctx, "", inf.HasSyncedChecker()) {
		t.Fatal("not synced")
	}
	cancel()
	<-done

	if got := testutil.ToFloat64(mustVec(t, reg, "warmcache_informer_store_objects")); got != 3 {
		t.Fatalf("store_objects = %v, want 3", got)
	}
	if got := testutil.ToFloat64(mustVec(t, reg, "warmcache_informer_relists_total")); got != 1 {
		t.Fatalf("relists_total = %v, want 1", got)
	}
	if got := testutil.ToFloat64(mustVec(t, reg, "warmcache_informer_store_healthy")); got != 1 {
		t.Fatalf("store_healthy = %v, want 1", got)
	}
	if got := testutil.ToFloat64(mustVec(t, reg, "warmcache_informer_apply_objects_total")); got != 3 {
		t.Fatalf("apply_objects_total = %v, want 3", got)
	}
	n, err := testutil.GatherAndCount(reg, "warmcache_informer_apply_duration_seconds", "warmcache_informer_replay_duration_seconds")
	if err != nil || n != 2 {
		t.Fatalf("histograms: %d series, %v", n, err)
	}
}

// mustVec returns the single series of the metric name as a collector.
func mustVec(t *testing.T, reg *prometheus.Registry, name string) prometheus.Collector {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			if len(mf.Metric) != 1 {
				t.Fatalf("%s has %d series", name, len(mf.Metric))
			}
			v := mf.Metric[0]
			g := prometheus.NewGauge(prometheus.GaugeOpts{Name: strings.ReplaceAll(name, ":", "_")})
			switch {
			case v.Counter != nil:
				g.Set(v.Counter.GetValue())
			case v.Gauge != nil:
				g.Set(v.Gauge.GetValue())
			}
			return g
		}
	}
	t.Fatalf("no metric %s", name)
	return nil
}

// TestBudgetMetrics checks the gauges and the counter of a queue budget
// shared by two queues.
func TestBudgetMetrics(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reg := prometheus.NewRegistry()
		set, err := metrics.New(reg, metrics.Options{})
		if err != nil {
			t.Fatal(err)
		}
		b, err := deltafifo.NewBudget(deltafifo.BudgetOptions{Limit: 4, Metrics: set.ForBudget("factory")})
		if err != nil {
			t.Fatal(err)
		}
		gauge := func(name string) float64 {
			t.Helper()
			return testutil.ToFloat64(mustVec(t, reg, name))
		}
		if got := gauge("warmcache_informer_queue_budget_limit"); got != 4 {
			t.Fatalf("queue_budget_limit = %v, want 4", got)
		}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var qs []*deltafifo.Queue
		for _, name := range []string{"a", "b"} {
			q, err := deltafifo.New(deltafifo.Options{Name: name, Budget: b})
			if err != nil {
				t.Fatal(err)
			}
			defer q.Close()
			for _, p := range []string{"1", "2"} {
				if err := q.Add(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: name, Name: p}}); err != nil {
					t.Fatal(err)
				}
			}
			qs = append(qs, q)
		}
		if got := gauge("warmcache_informer_queue_budget_used"); got != 4 {
			t.Fatalf("queue_budget_used = %v, want 4", got)
		}
		done := make(chan error, 1)
		go func() { done <- qs[0].Add(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "3"}}) }()
		synctest.Wait()
		if got := gauge("warmcache_informer_queue_budget_waits_total"); got != 1 {
			t.Fatalf("queue_budget_waits_total = %v, want 1", got)
		}
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Fatalf("blocked add: %v, want context.Canceled", err)
		}
		qs[1].Close()
		if got := gauge("warmcache_informer_queue_budget_used"); got != 2 {
			t.Fatalf("queue_budget_used = %v after a queue closed, want 2", got)
		}
	})
}

// TestListGateMetrics checks the per-informer gauge and wait histogram of
// a list gate.
func TestListGateMetrics(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reg := prometheus.NewRegistry()
		set, err := metrics.New(reg, metrics.Options{})
		if err != nil {
			t.Fatal(err)
		}
		g, err := reflector.NewListGate(reflector.ListGateOptions{Slots: 1, Metrics: set.ForListGate()})
		if err != nil {
			t.Fatal(err)
		}
		holding := func(name string) float64 {
			t.Helper()
			v, err := reg.Gather()
			if err != nil {
				t.Fatal(err)
			}
			for _, mf := range v {
				if mf.GetName() != "warmcache_informer_list_gate_holding" {
					continue
				}
				for _, m := range mf.GetMetric() {
					if m.GetLabel()[0].GetValue() == name {
						return m.GetGauge().GetValue()
					}
				}
			}
			t.Fatalf("no list_gate_holding series for %s", name)
			return 0
		}
		ctx := context.Background()
		a, err := g.Enter(ctx, "a")
		if err != nil {
			t.Fatal(err)
		}
		entered := make(chan *reflector.ListPass)
		go func() {
			b, err := g.Enter(ctx, "b")
			if err != nil {
				t.Error(err)
			}
			entered <- b
		}()
		synctest.Wait()
		time.Sleep(2 * time.Second)
		a.Progress()
		time.Sleep(time.Second)
		a.Leave()
		b := <-entered
		defer b.Leave()
		if holding("a") != 0 || holding("b") != 1 {
			t.Fatalf("list_gate_holding a=%v b=%v, want 0 and 1", holding("a"), holding("b"))
		}
		v, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		sums := map[string]float64{}
		for _, mf := range v {
			if mf.GetName() == "warmcache_informer_list_gate_wait_seconds" {
				for _, m := range mf.GetMetric() {
					sums[m.GetLabel()[0].GetValue()] = m.GetHistogram().GetSampleSum()
				}
			}
		}
		if sums["a"] != 0 || sums["b"] != 3 {
			t.Fatalf("waits %v, want a 0s and b 3s", sums)
		}
	})
}
