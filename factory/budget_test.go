package factory

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2/ktesting"

	"github.com/warmcache/warmcache/informer"
	"github.com/warmcache/warmcache/internal/fakesource"
	"github.com/warmcache/warmcache/reflector"
	"github.com/warmcache/warmcache/store/bolt"
)

// budgetRecorder records a queue budget's use.
type budgetRecorder struct {
	mu      sync.Mutex
	reports []int
	blocked int
	changed chan struct{}
}

func newBudgetRecorder() *budgetRecorder { return &budgetRecorder{changed: make(chan struct{})} }

func (r *budgetRecorder) Used(used, limit int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reports = append(r.reports, used)
	close(r.changed)
	r.changed = make(chan struct{})
}

func (r *budgetRecorder) Blocked() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.blocked++
	close(r.changed)
	r.changed = make(chan struct{})
}

// waitBlocked waits until more than from pushes have waited for the
// budget.
func (r *budgetRecorder) waitBlocked(ctx context.Context, t *testing.T, from int) {
	t.Helper()
	for {
		r.mu.Lock()
		blocked, ch := r.blocked, r.changed
		r.mu.Unlock()
		if blocked > from {
			return
		}
		select {
		case <-ch:
		case <-ctx.Done():
			t.Fatalf("no push waited for the budget after the first %d: %v", from, ctx.Err())
		}
	}
}

// waitUsed waits until the budget's last report is want objects in use.
func (r *budgetRecorder) waitUsed(ctx context.Context, t *testing.T, want int) {
	t.Helper()
	for {
		r.mu.Lock()
		last, ch := -1, r.changed
		if len(r.reports) > 0 {
			last = r.reports[len(r.reports)-1]
		}
		r.mu.Unlock()
		if last == want {
			return
		}
		select {
		case <-ch:
		case <-ctx.Done():
			t.Fatalf("the budget never had %d objects in use (last report %d): %v", want, last, ctx.Err())
		}
	}
}

// state returns the number of reports, the largest since report from and
// the number of blocked pushes.
func (r *budgetRecorder) state(from int) (n, peak, blocked int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, u := range r.reports[min(from, len(r.reports)):] {
		peak = max(peak, u)
	}
	return len(r.reports), peak, r.blocked
}

// stuckHandler counts adds; it blocks in its first notification until
// release is closed, and closes entered when it gets there.
type stuckHandler struct {
	once    sync.Once
	entered chan struct{}
	release chan struct{}

	mu      sync.Mutex
	adds    int
	changed chan struct{} // closed and replaced on every add
}

func newHandler(stuck bool) *stuckHandler {
	h := &stuckHandler{entered: make(chan struct{}), release: make(chan struct{}), changed: make(chan struct{})}
	if !stuck {
		close(h.release)
	}
	return h
}

func (h *stuckHandler) OnAdd(interface{}, bool) {
	h.once.Do(func() { close(h.entered) })
	<-h.release
	h.mu.Lock()
	defer h.mu.Unlock()
	h.adds++
	close(h.changed)
	h.changed = make(chan struct{})
}
func (h *stuckHandler) OnUpdate(interface{}, interface{}) {}
func (h *stuckHandler) OnDelete(interface{})              {}

// waitAdds waits until the handler was told of n adds.
func (h *stuckHandler) waitAdds(ctx context.Context, t *testing.T, n int) {
	t.Helper()
	for {
		h.mu.Lock()
		got, ch := h.adds, h.changed
		h.mu.Unlock()
		if got >= n {
			return
		}
		select {
		case <-ch:
		case <-ctx.Done():
			t.Fatalf("the handler was told of %d adds, want %d: %v", got, n, ctx.Err())
		}
	}
}

// addPods adds n pods p<first>... in namespace ns to src.
func addPods(t *testing.T, src *fakesource.Source, ns string, first, n int) {
	t.Helper()
	for i := first; i < first+n; i++ {
		p := pod(fmt.Sprintf("p%03d", i), "")
		p.Namespace = ns
		if _, err := src.Add(p); err != nil {
			t.Fatal(err)
		}
	}
}

// handledInformer returns the informer of gvr's objects of kind in scope,
// with a new handler that never blocks (newHandler(false)).
func handledInformer(ctx context.Context, t *testing.T, f *Factory, gvr schema.GroupVersionResource, kind string, scope Scope) (*informer.Informer, *stuckHandler) {
	t.Helper()
	inf, err := f.ForResource(ctx, gvr, kind, scope)
	if err != nil {
		t.Fatal(err)
	}
	h := newHandler(false)
	if _, err := inf.AddEventHandler(h); err != nil {
		t.Fatal(err)
	}
	return inf, h
}

// syncNamespaces creates the handled informers of the pods of namespaces
// ns00, ns01, ... (n of them) in f, starts f and waits until each has
// synced and told its handler of perNS adds.
func syncNamespaces(ctx context.Context, t *testing.T, f *Factory, n, perNS int) {
	t.Helper()
	var hs []*stuckHandler
	for k := range n {
		_, h := handledInformer(ctx, t, f, podsGVR, "Pod", Scope{Namespace: fmt.Sprintf("ns%02d", k)})
		hs = append(hs, h)
	}
	syncAll(ctx, t, f)
	for _, h := range hs {
		h.waitAdds(ctx, t, perNS)
	}
}

func budgetFactory(t *testing.T, host string, budget int, page int64, m *budgetRecorder) *Factory {
	t.Helper()
	l := ktesting.NewLogger(t, ktesting.NewConfig())
	f, err := New(context.Background(), Options{
		Path:               filepath.Join(t.TempDir(), "f.db"),
		Bolt:               bolt.Options{Sync: bolt.UnsafeNoSync},
		RESTConfig:         &rest.Config{Host: host},
		Logger:             &l,
		QueueBudget:        budget,
		QueueBudgetMetrics: m,
		Informer: informer.Options{
			ReplayPending: 2,
			Reflector:     reflector.Options{ListPageSize: page},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestFactoryQueueBudgetManyInformersSync runs many informers, each
// listing pages larger than its share of a small queue budget, at once:
// every one syncs and tells its handler of every object, the budget never
// holds more than its limit plus one page per informer, and Shutdown gives
// all of it back.
func TestFactoryQueueBudgetManyInformersSync(t *testing.T) {
	const informers, perNS, budget, page = 12, 40, 8, 5
	src := newSource(t)
	for k := range informers {
		addPods(t, src, fmt.Sprintf("ns%02d", k), 0, perNS)
	}
	srv := serveSource(t, src)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	m := newBudgetRecorder()
	f := budgetFactory(t, srv.URL, budget, page, m)
	defer f.Shutdown()
	if f.QueueBudget() == nil || f.QueueBudget().Limit() != budget {
		t.Fatalf("QueueBudget %v, want one of limit %d", f.QueueBudget(), budget)
	}
	syncNamespaces(ctx, t, f, informers, perNS)
	_, peak, _ := m.state(0)
	if peak > budget+informers*page {
		t.Errorf("the budget held %d objects, want at most %d+%d", peak, budget, informers*page)
	}
	if err := f.Shutdown(); err != nil {
		t.Fatal(err)
	}
	if used := f.QueueBudget().Used(); used != 0 {
		t.Errorf("the budget holds %d objects after Shutdown, want 0", used)
	}
}

// TestFactoryQueueBudgetStuckHandler checks that an informer whose handler
// never returns holds at most half the budget, so that the factory's
// other informers still sync, and that it syncs once its handler returns.
// Its cold start tells the handler each page as it is stored, paced, so
// the stuck handler holds up its list: the list's pages (of its share)
// fill its queue.
func TestFactoryQueueBudgetStuckHandler(t *testing.T) {
	const others, perNS, budget, page = 8, 30, 8, 4
	src := newSource(t)
	addPods(t, src, "stuck", 0, perNS)
	for k := range others {
		addPods(t, src, fmt.Sprintf("ns%02d", k), 0, perNS)
	}
	srv := serveSource(t, src)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	m := newBudgetRecorder()
	f := budgetFactory(t, srv.URL, budget, page, m)
	defer f.Shutdown()

	stuckInf, err := f.ForResource(ctx, podsGVR, "Pod", Scope{Namespace: "stuck"})
	if err != nil {
		t.Fatal(err)
	}
	stuck := newHandler(true)
	released := false
	defer func() {
		if !released {
			close(stuck.release)
		}
	}()
	if _, err := stuckInf.AddEventHandler(stuck); err != nil {
		t.Fatal(err)
	}
	f.Start(ctx)
	select {
	case <-stuck.entered: // its adds are stuck, and with them its list
	case <-ctx.Done():
		t.Fatal("the stuck handler was never called")
	}
	// The list's pages fill the stuck informer's queue up to its share,
	// half the budget, and its reflector waits there (the only informer
	// started yet).
	// The first push that waits may come while the loop still pops a
	// batch the pacing has not yet stopped: what is asserted is the
	// state the queue settles in, and that it never held more.
	addPods(t, src, "stuck", perNS, 20)
	m.waitBlocked(ctx, t, 0)
	m.waitUsed(ctx, t, budget/2)
	if _, peak, _ := m.state(0); peak > budget/2 {
		t.Fatalf("the stuck informer's queue held %d of the budget, more than its share %d", peak, budget/2)
	}

	var hs []*stuckHandler
	var infs []*informer.Informer
	for k := range others {
		inf, h := handledInformer(ctx, t, f, podsGVR, "Pod", Scope{Namespace: fmt.Sprintf("ns%02d", k)})
		hs, infs = append(hs, h), append(infs, inf)
	}
	f.Start(ctx)
	for k, inf := range infs {
		if !cache.WaitFor(ctx, "", inf.HasSyncedChecker()) {
			t.Fatalf("informer %d did not sync beside the stuck one", k)
		}
		hs[k].waitAdds(ctx, t, perNS)
	}
	if stuckInf.HasSynced() {
		t.Fatal("the stuck informer synced with its handler stuck")
	}
	if _, _, blocked := m.state(0); blocked == 0 {
		t.Error("no push waited for the budget: the test did not exercise it")
	}

	close(stuck.release)
	released = true
	if !cache.WaitFor(ctx, "", stuckInf.HasSyncedChecker()) {
		t.Fatal("the stuck informer did not sync once its handler returned")
	}
	stuck.waitAdds(ctx, t, perNS+20)
	if err := f.Shutdown(); err != nil {
		t.Fatal(err)
	}
	if used := f.QueueBudget().Used(); used != 0 {
		t.Errorf("the budget holds %d objects after Shutdown, want 0", used)
	}
}

func TestFactoryQueueBudgetOption(t *testing.T) {
	for _, tc := range []struct {
		budget, want int
	}{{0, DefaultQueueBudget}, {5, 5}, {-1, 0}} {
		f, err := New(context.Background(), Options{QueueBudget: tc.budget})
		if err != nil {
			t.Fatal(err)
		}
		got := 0
		if b := f.QueueBudget(); b != nil {
			got = b.Limit()
		}
		if got != tc.want {
			t.Errorf("QueueBudget %d: budget limit %d, want %d (0: none)", tc.budget, got, tc.want)
		}
		if err := f.Shutdown(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestRealAPIServerQueueBudget runs many informers of a factory, each
// listing pages larger than its share of a small queue budget, against a
// real kube-apiserver: every one syncs with the server's objects, then
// follows a change, and Shutdown gives the whole budget back.
func TestRealAPIServerQueueBudget(t *testing.T) {
	t.Parallel()
	const informers, perNS, budget, page = 10, 20, 8, 5
	ctx, env := realAPIServer(t)
	cs := kubernetes.NewForConfigOrDie(env.RestConfig())
	var namespaces []string
	for range informers {
		ns := env.Namespace(ctx, t, "budget")
		for i := range perNS {
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm%02d", i)}}
			if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		namespaces = append(namespaces, ns)
	}
	m := newBudgetRecorder()
	l := ktesting.NewLogger(t, ktesting.NewConfig())
	f, err := New(ctx, Options{
		Path:               filepath.Join(t.TempDir(), "budget.db"),
		Bolt:               bolt.Options{Sync: bolt.UnsafeNoSync},
		RESTConfig:         env.RestConfig(),
		Logger:             &l,
		QueueBudget:        budget,
		QueueBudgetMetrics: m,
		Informer:           informer.Options{Reflector: reflector.Options{ListPageSize: page}},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Shutdown()
	gvr := corev1.SchemeGroupVersion.WithResource("configmaps")
	var hs []*stuckHandler
	for _, ns := range namespaces {
		_, h := handledInformer(ctx, t, f, gvr, "", Scope{Namespace: ns})
		hs = append(hs, h)
	}
	syncAll(ctx, t, f)
	for k, ns := range namespaces {
		hs[k].waitAdds(ctx, t, perNS)
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "late"}}
		if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, h := range hs {
		h.waitAdds(ctx, t, perNS+1)
	}
	if _, peak, _ := m.state(0); peak > budget+informers*page {
		t.Errorf("the budget held %d objects, want at most %d+%d", peak, budget, informers*page)
	}
	if err := f.Shutdown(); err != nil {
		t.Fatal(err)
	}
	if used := f.QueueBudget().Used(); used != 0 {
		t.Errorf("the budget holds %d objects after Shutdown, want 0", used)
	}
}
