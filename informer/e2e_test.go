package informer

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2/ktesting"

	"github.com/warmcache/warmcache/internal/fakesource"
	"github.com/warmcache/warmcache/internal/testkit"
	"github.com/warmcache/warmcache/store"
	"github.com/warmcache/warmcache/store/bolt"
	"github.com/warmcache/warmcache/store/codec"
)

var podGVK = corev1.SchemeGroupVersion.WithKind("Pod")

// storeKind opens the same store again across informer runs, as a
// restarted process would.
type storeKind struct {
	name string
	// open returns the store, and a function closing it (and its file).
	open func(t *testing.T) (store.Store, func())
}

func storeKinds(t *testing.T, onCorruption func(error)) []storeKind {
	mem := newMemStore(t)
	path := filepath.Join(t.TempDir(), "cache.db")
	return []storeKind{
		{"memory", func(*testing.T) (store.Store, func()) { return mem, func() {} }},
		{"bolt", func(t *testing.T) (store.Store, func()) { return openBolt(t, path, nil, onCorruption) }},
	}
}

// openBolt opens the pods resource of the file at path; c defaults to the
// pods codec.
func openBolt(t *testing.T, path string, c codec.Codec, onCorruption func(error)) (store.Store, func()) {
	t.Helper()
	return openBoltWith(t, path, bolt.Options{}, c, onCorruption)
}

// openBoltWith is openBolt with the file opened with opts, without sync and
// with the test's logger.
func openBoltWith(t *testing.T, path string, opts bolt.Options, c codec.Codec, onCorruption func(error)) (store.Store, func()) {
	t.Helper()
	ctx := context.Background()
	opts.Sync, opts.Logger = bolt.UnsafeNoSync, ktesting.NewLogger(t, ktesting.NewConfig())
	db, err := bolt.Open(ctx, path, opts)
	if err != nil {
		t.Fatal(err)
	}
	if c == nil {
		if c, err = codec.For(nil, podGVK); err != nil {
			t.Fatal(err)
		}
	}
	s, err := db.Resource(ctx, bolt.ResourceOptions{
		Identity:     bolt.Identity{Version: "v1", Resource: "pods", Kind: "Pod"},
		Codec:        c,
		OnCorruption: onCorruption,
	})
	if err != nil {
		_ = db.Close()
		t.Fatal(err)
	}
	return s, func() {
		if err := db.Close(); err != nil {
			t.Error(err)
		}
	}
}

// newSource returns a fake source holding pods ns/<name>.
func newSource(t *testing.T, names ...string) *fakesource.Source {
	t.Helper()
	return fakesource.NewForTest(t, fakesource.Options{}, testkit.Pods(names...)...)
}

// running is an informer run by RunWithContext.
type running struct {
	inf    *Informer
	regs   []cache.ResourceEventHandlerRegistration
	cancel context.CancelFunc
	done   chan struct{}
}

// newInformer returns an informer of pods on lw, logging to the test, with
// a fast reflector backoff unless opts sets one.
func newInformer(t *testing.T, lw cache.ListerWatcher, opts Options) *Informer {
	t.Helper()
	if opts.Logger == nil {
		l := ktesting.NewLogger(t, ktesting.NewConfig())
		opts.Logger = &l
	}
	if opts.Reflector.Backoff == nil {
		opts.Reflector.Backoff = &wait.Backoff{Duration: time.Millisecond, Factor: 2, Cap: 10 * time.Millisecond, Steps: 100}
	}
	inf, err := New(lw, &corev1.Pod{}, opts)
	if err != nil {
		t.Fatal(err)
	}
	return inf
}

// runInformer runs a new informer (newInformer) with handlers until stop
// or the end of the test.
func runInformer(t *testing.T, lw cache.ListerWatcher, opts Options, handlers ...cache.ResourceEventHandler) *running {
	t.Helper()
	return startInformer(t, newInformer(t, lw, opts), handlers...)
}

// startInformer adds handlers to inf and runs it until stop or the end of
// the test.
func startInformer(t *testing.T, inf *Informer, handlers ...cache.ResourceEventHandler) *running {
	t.Helper()
	r := &running{inf: inf, done: make(chan struct{})}
	for _, h := range handlers {
		reg, err := inf.AddEventHandler(h)
		if err != nil {
			t.Fatal(err)
		}
		r.regs = append(r.regs, reg)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	go func() {
		defer close(r.done)
		inf.RunWithContext(ctx)
	}()
	t.Cleanup(r.stop)
	return r
}

// stop stops the informer and waits for RunWithContext to return; calls
// after the first do nothing.
func (r *running) stop() {
	r.cancel()
	<-r.done
}

func (r *running) waitSynced(t *testing.T) {
	t.Helper()
	waitDone(t, "informer", r.inf.HasSyncedChecker())
}

// waitHandlersSynced waits until every handler given to runInformer or
// startInformer has synced (its initial adds delivered).
func (r *running) waitHandlersSynced(t *testing.T) {
	t.Helper()
	for _, reg := range r.regs {
		waitDone(t, "handler", reg.HasSyncedChecker())
	}
}

// waitDone waits up to 30s for c, failing the test if it is not done.
func waitDone(t *testing.T, what string, c cache.DoneChecker) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if !cache.WaitFor(ctx, "", c) {
		t.Fatalf("%s did not sync", what)
	}
}

// sameAsSource fails unless st holds exactly the source's pods.
func sameAsSource(t *testing.T, st cache.Store, src *fakesource.Source) {
	t.Helper()
	want := map[string]string{}
	for _, o := range src.Objects(podGVK) {
		p := o.(*corev1.Pod)
		want[p.Namespace+"/"+p.Name] = p.ResourceVersion
	}
	got := map[string]string{}
	for _, o := range st.List() {
		p := o.(*corev1.Pod)
		got[p.Namespace+"/"+p.Name] = p.ResourceVersion
	}
	if d := diffMaps(got, want); d != "" {
		t.Fatalf("store (%d objects) differs from the source (%d): %s", len(got), len(want), d)
	}
}

// waitStoreMatches polls until the store equals the source.
func waitStoreMatches(t *testing.T, st cache.Store, src *fakesource.Source) {
	t.Helper()
	_ = wait.PollUntilContextTimeout(context.Background(), time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return storeEquals(st, src), nil
	})
	sameAsSource(t, st, src)
}

func storeEquals(st cache.Store, src *fakesource.Source) bool {
	objs := src.Objects(podGVK)
	if len(st.ListKeys()) != len(objs) {
		return false
	}
	for _, o := range objs {
		p := o.(*corev1.Pod)
		got, ok, err := st.GetByKey(p.Namespace + "/" + p.Name)
		if err != nil || !ok || got.(*corev1.Pod).ResourceVersion != p.ResourceVersion {
			return false
		}
	}
	return true
}

func mustRV(t *testing.T) func(rv string, err error) string {
	return func(rv string, err error) string {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return rv
	}
}

func getPod(t *testing.T, src *fakesource.Source, name string) *corev1.Pod {
	t.Helper()
	o, ok := src.Get(podGVK, "ns", name)
	if !ok {
		t.Fatalf("source has no pod %s", name)
	}
	return o.(*corev1.Pod)
}

// TestWarmStartResumesWithoutList: a warm start lists nothing but the
// resume check (or relists once after a 410), and is synced only once its
// store holds the server's state. By default the handlers are then told
// that state as the initial list, as after a cold start: the pod deleted
// while the informer was down never appears, the one updated appears once
// at its current version. With Options.WarmStartChanges they are told the
// stored state, then the changes (a relist's diff after a 410).
//
// A store of at most a page of objects (small) is checked whole by the
// resume check, whose page is then the relist: the warm start is the
// LIST of one page, never a watch from the stored resourceVersion, and
// with WarmStartChanges the changes are the relist's diff.
func TestWarmStartResumesWithoutList(t *testing.T) {
	for _, small := range []bool{false, true} {
		for _, changesMode := range []bool{false, true} {
			for _, expire := range []bool{false, true} {
				for _, sk := range storeKinds(t, nil) {
					t.Run(fmt.Sprintf("%s/expired=%v/changes=%v/small=%v", sk.name, expire, changesMode, small), func(t *testing.T) {
						testWarmStartResumes(t, sk, expire, changesMode, small)
					})
				}
			}
		}
	}
}

func testWarmStartResumes(t *testing.T, sk storeKind, expire, changesMode, small bool) {
	src := newSource(t, "a", "b", "c")
	ep := src.Endpoint(podGVK, "")
	st, closeStore := sk.open(t)
	rec1 := newRecorder()
	r1 := runInformer(t, ep, Options{Store: st}, rec1)
	r1.waitSynced(t)
	rec1.WaitFor(t, 3)
	r1.stop()
	closeStore()
	before := src.Stats()

	// While the informer is down, the source changes.
	bOld := getPod(t, src, "b").ResourceVersion
	cOld := getPod(t, src, "c").ResourceVersion
	b := getPod(t, src, "b")
	b.Labels = map[string]string{"x": "y"}
	bNew := mustRV(t)(src.Update(b))
	cDel := mustRV(t)(src.Delete(getPod(t, src, "c")))
	dRV := mustRV(t)(src.Add(testkit.Pod("d", "")))
	if expire {
		if err := src.Compact(src.ResourceVersion()); err != nil {
			t.Fatal(err)
		}
	}

	st, closeStore = sk.open(t)
	defer closeStore()
	rec2 := newRecorder()
	opts := Options{Store: st, WarmStartChanges: changesMode}
	if !small {
		opts.Reflector.ListPageSize = 2 // the store's 3 pods are more than a page
	}
	r2 := runInformer(t, ep, opts, rec2)
	r2.waitSynced(t)
	// Synced means caught up: the store holds the server's state now.
	sameAsSource(t, st, src)
	aRV := getPod(t, src, "a").ResourceVersion
	var want []event
	switch {
	case !changesMode:
		want = []event{
			event("add ns/a@" + aRV + " initial=true"),
			event("add ns/b@" + bNew + " initial=true"),
			event("add ns/d@" + dRV + " initial=true"),
		}
	case expire || small:
		// The relist diff: only what changed, in key order. The replay
		// was the initial list, so the relist's add is not.
		want = []event{
			event("add ns/a@" + aRV + " initial=true"),
			event("add ns/b@" + bOld + " initial=true"),
			event("add ns/c@" + cOld + " initial=true"),
			event("update ns/b@" + bOld + " -> ns/b@" + bNew),
			event("delete dfsu(ns/c@" + cOld + ")"),
			event("add ns/d@" + dRV + " initial=false"),
		}
	default:
		want = []event{
			event("add ns/a@" + aRV + " initial=true"),
			event("add ns/b@" + bOld + " initial=true"),
			event("add ns/c@" + cOld + " initial=true"),
			event("update ns/b@" + bOld + " -> ns/b@" + bNew),
			event("delete ns/c@" + cDel),
			event("add ns/d@" + dRV + " initial=false"),
		}
	}
	got := rec2.WaitFor(t, len(want))
	equalEvents(t, got, want)
	waitStoreMatches(t, st, src)
	after := src.Stats()
	lists := after.Lists + after.WatchLists - before.Lists - before.WatchLists
	// Every warm start makes one resume check (a LIST of at most one
	// object reading the server's resourceVersion, or of a page for a
	// small store, which is the relist when the resource changed).
	switch {
	case small && lists != 1:
		t.Fatalf("%d lists on a warm start of a small store, want 1 (the resume check, which is the relist)", lists)
	case !small && expire && lists != 2:
		t.Fatalf("%d lists after a 410, want 2 (the resume check and the relist)", lists)
	case !small && !expire && lists != 1:
		t.Fatalf("%d lists on a warm start, want 1 (the resume check)", lists)
	}
	r2.stop()
	if extra := rec2.Snapshot(); len(extra) != len(want) {
		t.Fatalf("unexpected extra events: %q", extra[len(want):])
	}
}
