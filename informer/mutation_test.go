package informer

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/warmcache/warmcache/internal/testkit"
	"github.com/warmcache/warmcache/store"
)

// reportSink collects the mutation detector's reports.
type reportSink struct {
	mu      sync.Mutex
	reports []string
}

func (s *reportSink) report(r string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reports = append(s.reports, r)
}

func (s *reportSink) snapshot() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.reports...)
}

// A handler that mutates the object it is handed (in the initial list, or
// in a late handler's replay of the store) is reported by the next
// periodic check, which runs on the informer's clock, with a diff naming
// the object; the objects left alone are not reported, and a reported
// mutation is not reported again when the informer stops.
func TestMutationDetectorReportsHandlerMutation(t *testing.T) {
	for _, late := range []bool{false, true} {
		for _, sk := range storeKinds(t, nil) {
			t.Run(fmt.Sprintf("%s/late=%v", sk.name, late), func(t *testing.T) {
				testHandlerMutationReported(t, sk, late)
			})
		}
	}
}

func testHandlerMutationReported(t *testing.T, sk storeKind, late bool) {
	src := newSource(t, "a", "b")
	st, closeStore := sk.open(t)
	defer closeStore()
	clk := testingclock.NewFakeClock(time.Now())
	var sink reportSink
	mutated := make(chan struct{})
	var once sync.Once
	handler := cache.ResourceEventHandlerFuncs{AddFunc: func(obj interface{}) {
		if p := obj.(*corev1.Pod); p.Name == "a" {
			once.Do(func() {
				p.Labels = map[string]string{"mutated": "by-handler"} // the bug reported
				close(mutated)
			})
		}
	}}
	var early []cache.ResourceEventHandler
	if !late {
		early = append(early, handler)
	}
	r := runInformer(t, src.Endpoint(podGVK, ""), Options{
		Store: st, Clock: clk, DetectMutations: true, OnMutation: sink.report,
	}, early...)
	r.waitSynced(t)
	if late {
		if _, err := r.inf.AddEventHandler(handler); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case <-mutated:
	case <-time.After(testkit.Timeout()):
		t.Fatal("the handler was not given pod a")
	}
	// The clock has not moved: no check has run.
	if got := sink.snapshot(); len(got) != 0 {
		t.Fatalf("reports before the first check: %q", got)
	}
	stepUntil(t, clk, func() bool { return len(sink.snapshot()) > 0 })
	r.stop()
	got := sink.snapshot()
	if len(got) != 1 {
		t.Fatalf("got %d reports, want 1: %q", len(got), got)
	}
	for _, want := range []string{"1 object(s)", "*v1.Pod ns/a changed", `"mutated": "by-handler"`} {
		if !strings.Contains(got[0], want) {
			t.Errorf("report lacks %q:\n%s", want, got[0])
		}
	}
	if strings.Contains(got[0], "ns/b") {
		t.Errorf("report names pod b, which nobody mutated:\n%s", got[0])
	}
}

// An object returned by any read of GetStore or GetIndexer (directly, by
// a typed lister, streamed by Scan or store.Select, or by
// store.GetUncached) and then mutated is reported; the objects read
// alongside it and left alone are not.
func TestMutationDetectorReportsMutatedReads(t *testing.T) {
	podA := func(objs []interface{}) *corev1.Pod {
		for _, o := range objs {
			if p := o.(*corev1.Pod); p.Name == "a" {
				return p
			}
		}
		return nil
	}
	scanned := func(scan func(store.ScanFunc) error) (*corev1.Pod, error) {
		var objs []interface{}
		err := scan(func(_ string, obj interface{}) error {
			objs = append(objs, obj)
			return nil
		})
		return podA(objs), err
	}
	reads := []struct {
		name string
		read func(inf *Informer) (*corev1.Pod, error)
	}{
		{"Get", func(inf *Informer) (*corev1.Pod, error) {
			o, _, err := inf.GetStore().Get(testkit.Pod("a", ""))
			return o.(*corev1.Pod), err
		}},
		{"GetByKey", func(inf *Informer) (*corev1.Pod, error) {
			o, _, err := inf.GetIndexer().GetByKey("ns/a")
			return o.(*corev1.Pod), err
		}},
		{"List", func(inf *Informer) (*corev1.Pod, error) { return podA(inf.GetStore().List()), nil }},
		{"Index", func(inf *Informer) (*corev1.Pod, error) {
			objs, err := inf.GetIndexer().Index(cache.NamespaceIndex, testkit.Pod("a", ""))
			return podA(objs), err
		}},
		{"ByIndex", func(inf *Informer) (*corev1.Pod, error) {
			objs, err := inf.GetIndexer().ByIndex(cache.NamespaceIndex, "ns")
			return podA(objs), err
		}},
		{"typed lister Get", func(inf *Informer) (*corev1.Pod, error) {
			return corelisters.NewPodLister(inf.GetIndexer()).Pods("ns").Get("a")
		}},
		{"typed lister List", func(inf *Informer) (*corev1.Pod, error) {
			ps, err := corelisters.NewPodLister(inf.GetIndexer()).List(labels.Everything())
			for _, p := range ps {
				if p.Name == "a" {
					return p, err
				}
			}
			return nil, err
		}},
		{"Scan", func(inf *Informer) (*corev1.Pod, error) {
			return scanned(func(fn store.ScanFunc) error {
				return inf.GetIndexer().(store.Store).Scan(context.Background(), fn)
			})
		}},
		{"Select", func(inf *Informer) (*corev1.Pod, error) {
			return scanned(func(fn store.ScanFunc) error {
				return store.Select(context.Background(), inf.GetIndexer(), store.Selection{Namespace: "ns"}, fn)
			})
		}},
		{"GetUncached", func(inf *Informer) (*corev1.Pod, error) {
			o, _, err := store.GetUncached(inf.GetIndexer(), "ns/a")
			return o.(*corev1.Pod), err
		}},
		{"ScanIndex", func(inf *Informer) (*corev1.Pod, error) {
			return scanned(func(fn store.ScanFunc) error {
				return inf.GetIndexer().(store.Store).ScanIndex(context.Background(), cache.NamespaceIndex, "ns", fn)
			})
		}},
	}
	for _, rd := range reads {
		t.Run(rd.name, func(t *testing.T) {
			var sink reportSink
			inf := newTestInformer(t, Options{
				DetectMutations: true, OnMutation: sink.report,
				Indexers: cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc},
			})
			h := startHarness(t, inf)
			h.relist("10", testkit.Pod("a", "1"), testkit.Pod("b", "2"))
			h.waitIdle("11")
			p, err := rd.read(inf)
			if err != nil || p == nil {
				t.Fatalf("read pod a: %v, %v", p, err)
			}
			inf.detector.check()
			if got := sink.snapshot(); len(got) != 0 {
				t.Fatalf("reports before any mutation: %q", got)
			}
			p.Labels = map[string]string{"mutated": "by-reader"} // the bug reported
			inf.detector.check()
			got := sink.snapshot()
			if len(got) != 1 || !strings.Contains(got[0], "1 object(s)") || !strings.Contains(got[0], "*v1.Pod ns/a changed") ||
				!strings.Contains(got[0], `"mutated": "by-reader"`) {
				t.Fatalf("got reports %q, want one of pod a's mutation", got)
			}
		})
	}
}

// The normal pipeline (initial list, adds, updates, deletes, resyncs, a
// late handler's replay, lister reads) mutates nothing it handed out,
// neither under the periodic checks nor at the final one.
func TestMutationDetectorNoFalsePositives(t *testing.T) {
	for _, sk := range storeKinds(t, nil) {
		t.Run(sk.name, func(t *testing.T) {
			src := newSource(t, "a", "b", "c")
			st, closeStore := sk.open(t)
			defer closeStore()
			clk := testingclock.NewFakeClock(time.Now())
			var sink reportSink
			early := newRecorder()
			r := runInformer(t, src.Endpoint(podGVK, ""), Options{
				Store: st, Clock: clk, ResyncPeriod: time.Second,
				DetectMutations: true, OnMutation: sink.report,
				Indexers: cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc},
			}, early)
			r.waitSynced(t)
			early.WaitFor(t, 3)
			a := getPod(t, src, "a")
			a.Labels = map[string]string{"updated": "yes"}
			mustRV(t)(src.Update(a))
			mustRV(t)(src.Delete(getPod(t, src, "b")))
			mustRV(t)(src.Add(testkit.Pod("d", "")))
			early.WaitFor(t, 6)
			late := newRecorder()
			if _, err := r.inf.AddEventHandler(late); err != nil {
				t.Fatal(err)
			}
			late.WaitFor(t, 3)
			lister := corelisters.NewPodLister(r.inf.GetIndexer())
			if ps, err := lister.Pods("ns").List(labels.Everything()); err != nil || len(ps) != 3 {
				t.Fatalf("lister: %d pods, %v", len(ps), err)
			}
			// Steps drive resyncs and periodic checks alike.
			stepUntil(t, clk, func() bool { return len(early.Snapshot()) >= 12 })
			r.stop()
			if got := sink.snapshot(); len(got) != 0 {
				t.Fatalf("false mutation reports:\n%s", strings.Join(got, "\n"))
			}
			if n := r.inf.detector.watched(); n < 4 {
				t.Fatalf("the detector watched %d objects, want at least the 4 handed out", n)
			}
		})
	}
}

// The detector is off unless Options.DetectMutations or the environment
// variable says otherwise; off, GetStore and GetIndexer return the store
// itself and nothing is copied.
func TestMutationDetectorSwitch(t *testing.T) {
	unset := "<unset>"
	for _, tc := range []struct {
		env  string
		opt  bool
		want bool
	}{
		{unset, false, false},
		{"", false, false},
		{"false", false, false},
		{"not-a-bool", false, false},
		{"true", false, true},
		{"1", false, true},
		{unset, true, true},
		{"false", true, true},
	} {
		t.Run(fmt.Sprintf("env=%s/option=%v", tc.env, tc.opt), func(t *testing.T) {
			t.Setenv(EnvMutationDetector, tc.env)
			if tc.env == unset {
				if err := os.Unsetenv(EnvMutationDetector); err != nil {
					t.Fatal(err)
				}
			}
			inf := newTestInformer(t, Options{DetectMutations: tc.opt})
			if on := inf.detector != nil; on != tc.want {
				t.Fatalf("detector on: %v, want %v", on, tc.want)
			}
			if on := inf.proc.detector != nil; on != tc.want {
				t.Fatalf("processor's detector on: %v, want %v", on, tc.want)
			}
			if same := inf.GetIndexer() == cache.Indexer(inf.Store()); same == tc.want {
				t.Fatalf("GetIndexer is the store itself: %v, want %v", same, !tc.want)
			}
			if same := inf.GetStore() == cache.Store(inf.Store()); same == tc.want {
				t.Fatalf("GetStore is the store itself: %v, want %v", same, !tc.want)
			}
		})
	}
}

// Copies are kept for two to four minutes of the informer's clock: an
// object handed out again stays watched, one that is not is forgotten
// (so the detector's memory is bounded); tombstones' objects are watched.
func TestMutationDetectorRetention(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Now())
	var sink reportSink
	d := newMutationDetector("pods", clk, sink.report)
	kept, dropped, tomb := testkit.Pod("kept", "1"), testkit.Pod("dropped", "1"), testkit.Pod("tomb", "1")
	d.watch(kept)
	d.watch(dropped)
	d.watch(cache.DeletedFinalStateUnknown{Key: "ns/tomb", Obj: tomb})
	if n := d.watched(); n != 3 {
		t.Fatalf("watching %d objects, want 3", n)
	}
	clk.Step(mutationRetain)
	d.check() // rotates
	d.watch(kept)
	clk.Step(mutationRetain)
	d.check() // rotates again: dropped and tomb are forgotten
	if n := d.watched(); n != 1 {
		t.Fatalf("watching %d objects after two rotations, want 1", n)
	}
	for _, p := range []*corev1.Pod{kept, dropped, tomb} {
		p.Labels = map[string]string{"mutated": "late"}
	}
	d.check()
	got := sink.snapshot()
	if len(got) != 1 || !strings.Contains(got[0], "ns/kept") || strings.Contains(got[0], "ns/dropped") {
		t.Fatalf("got reports %q, want one naming ns/kept only", got)
	}

	// A tombstone's object is compared too.
	d.watch(cache.DeletedFinalStateUnknown{Key: "ns/t2", Obj: testkit.Pod("t2", "1")})
	if n := d.watched(); n != 1 {
		t.Fatalf("watching %d objects, want the tombstone's object", n)
	}
}

// Without OnMutation, a mutation panics with the report, as client-go's
// detector does.
func TestMutationDetectorPanicsByDefault(t *testing.T) {
	d := newMutationDetector("pods", testingclock.NewFakeClock(time.Now()), nil)
	p := testkit.Pod("a", "1")
	d.watch(runtime.Object(p))
	p.ResourceVersion = "2"
	defer func() {
		r := recover()
		msg, _ := r.(string)
		if !strings.Contains(msg, "cache pods modified") || !strings.Contains(msg, "ns/a") {
			t.Fatalf("recovered %v, want the mutation report", r)
		}
	}()
	d.check()
	t.Fatal("check did not panic")
}

// A periodic check compares a bounded share of the watched objects, the
// recent and the older copies alike; the check at stop compares them all,
// so nothing mutated goes unreported.
func TestMutationDetectorCheckBudget(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Now())
	var sink reportSink
	d := newMutationDetector("pods", clk, sink.report)
	older, recent := testkit.Pod("older", "1"), testkit.Pod("recent", "1")
	d.watch(older)
	clk.Step(mutationRetain)
	d.check() // rotates: older is an older copy now
	d.watch(recent)
	older.Labels = map[string]string{"mutated": "yes"}
	recent.Labels = map[string]string{"mutated": "yes"}

	d.checkSome(0)
	if got := sink.snapshot(); len(got) != 0 {
		t.Fatalf("a check with no budget reported %q", got)
	}
	d.checkSome(2)
	got := sink.snapshot()
	if len(got) != 1 || !strings.Contains(got[0], "ns/older") || !strings.Contains(got[0], "ns/recent") {
		t.Fatalf("a check with a budget of 2 reported %q, want one report naming both", got)
	}

	// More watched than the budget: one check finds one of two mutated
	// objects at most; the full check finds the rest.
	a, b := testkit.Pod("a", "1"), testkit.Pod("b", "1")
	d.watch(a)
	d.watch(b)
	a.Labels = map[string]string{"mutated": "yes"}
	b.Labels = map[string]string{"mutated": "yes"}
	d.checkSome(1)
	if n := len(sink.snapshot()); n > 2 {
		t.Fatalf("a check with a budget of 1 made %d reports", n-1)
	}
	d.check()
	all := strings.Join(sink.snapshot()[1:], "\n")
	if !strings.Contains(all, "ns/a") || !strings.Contains(all, "ns/b") {
		t.Fatalf("after the full check, reports %q, want ns/a and ns/b", all)
	}
}
