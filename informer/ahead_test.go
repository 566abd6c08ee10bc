package informer

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/warmcache/warmcache/deltafifo"
	"github.com/warmcache/warmcache/internal/fakesource"
	"github.com/warmcache/warmcache/reflector"
	"github.com/warmcache/warmcache/store"
	"github.com/warmcache/warmcache/store/codec"
)

// writeFile writes a complete file of src's pods, as a process that ran
// against src and stopped would leave it, and returns its path and codec.
func writeFile(t *testing.T, src *fakesource.Source) (string, codec.Codec) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "warm.db")
	c, err := codec.For(nil, podGVK)
	if err != nil {
		t.Fatal(err)
	}
	st, closeStore := openBolt(t, path, c, nil)
	r := runInformer(t, src.Endpoint(podGVK, ""), Options{Store: st})
	r.waitSynced(t)
	r.stop()
	closeStore()
	return path, c
}

// TestWarmStartAheadOfServerNeverReplaysTheFile: a file written against
// one server, reused against another whose resourceVersion has not reached
// the stored one (a recreated cluster, an etcd restored from an older
// backup). The resume check finds the file ahead; the handler is never
// told the stored objects, only the new server's, as initial adds, and the
// informer is synced after that relist.
func TestWarmStartAheadOfServerNeverReplaysTheFile(t *testing.T) {
	path, c := writeFile(t, newSource(t, "a", "b", "c", "d", "e"))

	fresh := newSource(t, "x") // its resourceVersion is behind the file's
	st, closeStore := openBolt(t, path, c, nil)
	defer closeStore()
	rec := newRecorder()
	r := runInformer(t, fresh.Endpoint(podGVK, ""), Options{Store: st}, rec)
	defer r.stop() // before the store closes
	r.waitHandlersSynced(t)
	want := []event{event("add ns/x@" + getPod(t, fresh, "x").ResourceVersion + " initial=true")}
	equalEvents(t, sortedEvents(rec.Snapshot()), want)
	if keys := r.inf.GetStore().ListKeys(); len(keys) != 1 || keys[0] != "ns/x" {
		t.Fatalf("store keys %v after the relist, want [ns/x]", keys)
	}
}

// gatedLW holds its first List (a warm start's resume check) until open
// is closed; listed is closed when that List arrives.
type gatedLW struct {
	*fakesource.Endpoint
	listed, open chan struct{}
	once         sync.Once
}

func newGatedLW(e *fakesource.Endpoint) *gatedLW {
	return &gatedLW{Endpoint: e, listed: make(chan struct{}), open: make(chan struct{})}
}

func (g *gatedLW) ListWithContext(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	first := false
	g.once.Do(func() { first = true; close(g.listed) })
	if first {
		select {
		case <-g.open:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return g.Endpoint.ListWithContext(ctx, opts)
}

func (g *gatedLW) List(opts metav1.ListOptions) (runtime.Object, error) {
	return g.ListWithContext(context.Background(), opts)
}

// heldDecision holds the reflector once it has decided how it starts, in
// reflector.Options.OnResumeDecided: the informer has the decision, the
// reflector has not listed yet. decided receives the decision.
type heldDecision struct {
	decided chan bool
	release func()
	held    chan struct{}
}

func newHeldDecision() *heldDecision {
	h := &heldDecision{decided: make(chan bool, 1), held: make(chan struct{})}
	h.release = sync.OnceFunc(func() { close(h.held) })
	return h
}

func (h *heldDecision) onResumeDecided(ahead bool) {
	select {
	case h.decided <- ahead:
		<-h.held
	default: // a later reflector of the same run
	}
}

// await returns the decision, failing the test after 30s.
func (h *heldDecision) await(t *testing.T) bool {
	t.Helper()
	select {
	case ahead := <-h.decided:
		return ahead
	case <-time.After(30 * time.Second):
		t.Fatal("the reflector never decided how it starts")
		return false
	}
}

// awaitClosed waits up to 30s for ch to be closed.
func awaitClosed(t *testing.T, what string, ch <-chan struct{}) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(30 * time.Second):
		t.Fatalf("%s never happened", what)
	}
}

// waitLateServed waits until the processing loop has served every late
// handler (it is back waiting for a batch) and every listener has
// delivered what it was given.
func waitLateServed(t *testing.T, inf *Informer) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		inf.mu.Lock()
		popping := len(inf.late) == 0 && inf.popCancel != nil
		inf.mu.Unlock()
		return popping && listenersIdle(inf), nil
	})
	if err != nil {
		t.Fatalf("late handlers not served: %v", err)
	}
}

// TestLateHandlerNeverToldAFileAheadOfTheServer (invariant 7): a handler
// added after Run, while the warm start waits for the resume check or
// once the check found the file ahead of the server and the relist is
// still to come, sees what the handlers added before Run see: none of the
// stored objects, then the server's as initial adds.
func TestLateHandlerNeverToldAFileAheadOfTheServer(t *testing.T) {
	for _, tc := range []struct {
		name string
		// holdCheck adds the handler while the resume check's LIST is
		// held, before the decision; otherwise after the decision, while
		// the relist is held.
		holdCheck bool
	}{
		{"while the resume check is held", true},
		{"while the relist is held", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path, c := writeFile(t, newSource(t, "a", "b", "c", "d", "e"))
			fresh := newSource(t, "x") // its resourceVersion is behind the file's
			lw := newGatedLW(fresh.Endpoint(podGVK, ""))
			if !tc.holdCheck {
				close(lw.open)
			}
			st, closeStore := openBolt(t, path, c, nil)
			defer closeStore()
			hold := newHeldDecision()
			early := newRecorder()
			r := runInformer(t, lw, Options{Store: st, Reflector: reflector.Options{OnResumeDecided: hold.onResumeDecided}}, early)
			defer r.stop()       // before the store closes
			defer hold.release() // before the informer stops, should the test fail

			var late *recorder
			addLate := func() {
				late = newRecorder()
				reg, err := r.inf.AddEventHandler(late)
				if err != nil {
					t.Fatal(err)
				}
				r.regs = append(r.regs, reg)
			}
			if tc.holdCheck {
				awaitClosed(t, "the resume check", lw.listed)
				addLate()
				close(lw.open)
			}
			if !hold.await(t) {
				t.Fatal("the resume check did not find the file ahead of the server")
			}
			if !tc.holdCheck {
				addLate()
			}
			waitLateServed(t, r.inf)
			if got := late.Snapshot(); len(got) != 0 {
				t.Fatalf("the late handler was told %v before the relist: objects of the file, not of the server", got)
			}
			hold.release()
			r.waitHandlersSynced(t)
			want := []event{event("add ns/x@" + getPod(t, fresh, "x").ResourceVersion + " initial=true")}
			equalEvents(t, early.Snapshot(), want)
			equalEvents(t, late.Snapshot(), want)
		})
	}
}

// TestLateHandlerWhileTheResumeCheckIsHeld: a handler added after Run
// while the warm-start replay waits for the resume check, which then
// trusts the file: the late handler is replayed the stored objects once,
// as the handler added before Run is.
func TestLateHandlerWhileTheResumeCheckIsHeld(t *testing.T) {
	src := newSource(t, "a", "b", "c")
	path, c := writeFile(t, src)
	lw := newGatedLW(src.Endpoint(podGVK, ""))
	st, closeStore := openBolt(t, path, c, nil)
	defer closeStore()
	early := newRecorder()
	r := runInformer(t, lw, Options{Store: st}, early)
	defer r.stop() // before the store closes
	defer func() {
		select {
		case <-lw.open:
		default:
			close(lw.open) // before the informer stops, should the test fail
		}
	}()
	awaitClosed(t, "the resume check", lw.listed)
	late := newRecorder()
	reg, err := r.inf.AddEventHandler(late)
	if err != nil {
		t.Fatal(err)
	}
	r.regs = append(r.regs, reg)
	close(lw.open)
	r.waitHandlersSynced(t)
	var want []event
	for _, name := range []string{"a", "b", "c"} {
		want = append(want, event("add ns/"+name+"@"+getPod(t, src, name).ResourceVersion+" initial=true"))
	}
	equalEvents(t, early.Snapshot(), want)
	equalEvents(t, late.Snapshot(), want)
	if s := src.Stats(); s.Lists+s.WatchLists != 2 {
		t.Fatalf("%d lists, want 2 (the cold start and the warm start's resume check)", s.Lists+s.WatchLists)
	}
}

// failingCheckLW fails the resume check's LIST (RV "", limit 1) with errs
// in turn, holding the last failure until release is closed (checkHeld
// is closed when it arrives). A watch from an RV ahead of the source's
// is accepted and stays silent, as kube-apiserver's does (see the
// reflector package documentation); resumed is closed when one arrives.
type failingCheckLW struct {
	*fakesource.Endpoint
	src                         *fakesource.Source
	checkHeld, release, resumed chan struct{}

	mu     sync.Mutex
	errs   []error
	closed bool
}

func newFailingCheckLW(src *fakesource.Source, errs ...error) *failingCheckLW {
	return &failingCheckLW{
		Endpoint: src.Endpoint(podGVK, ""), src: src, errs: errs,
		checkHeld: make(chan struct{}), release: make(chan struct{}), resumed: make(chan struct{}),
	}
}

func (f *failingCheckLW) ListWithContext(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	if opts.ResourceVersion == "" && opts.Continue == "" {
		// The resume check (a consistent LIST: of one object, or of a
		// page for a small store); the relist after it is a WatchList.
		f.mu.Lock()
		var err error
		last := false
		if len(f.errs) > 0 {
			err, f.errs = f.errs[0], f.errs[1:]
			last = len(f.errs) == 0
		}
		f.mu.Unlock()
		if last {
			close(f.checkHeld)
			select {
			case <-f.release:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		if err != nil {
			return nil, err
		}
	}
	return f.Endpoint.ListWithContext(ctx, opts)
}

func (f *failingCheckLW) List(opts metav1.ListOptions) (runtime.Object, error) {
	return f.ListWithContext(context.Background(), opts)
}

func (f *failingCheckLW) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	rv, err := strconv.ParseInt(opts.ResourceVersion, 10, 64)
	server, _ := strconv.ParseInt(f.src.ResourceVersion(), 10, 64)
	if err == nil && opts.SendInitialEvents == nil && rv > server {
		f.mu.Lock()
		if !f.closed {
			f.closed = true
			close(f.resumed)
		}
		f.mu.Unlock()
		return watch.NewFake(), nil // silent until stopped
	}
	return f.Endpoint.WatchWithContext(ctx, opts)
}

func (f *failingCheckLW) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	return f.WatchWithContext(context.Background(), opts)
}

// TestWarmStartWaitsForAFailingResumeCheck (invariant 7): a file reused
// against a server whose resourceVersion has not reached it (a recreated
// cluster, an etcd restored from an older backup) while the resume check
// cannot ask the server (connection refused, 503). No handler is told any
// stored object and the informer is not synced while the check fails: it
// is retried, not skipped (resuming unchecked would watch from the file's
// RV, which kube-apiserver accepts and stays silent on, and serve the file
// as current). Once the server answers, the check finds the file ahead,
// and the handlers are told only the relisted objects.
func TestWarmStartWaitsForAFailingResumeCheck(t *testing.T) {
	path, c := writeFile(t, newSource(t, "a", "b", "c", "d", "e"))
	fresh := newSource(t, "x") // its resourceVersion is behind the file's
	lw := newFailingCheckLW(fresh, fakesource.ConnectionRefused(),
		apierrors.NewServiceUnavailable("apiserver is starting"), apierrors.NewServiceUnavailable("apiserver is starting"))
	st, closeStore := openBolt(t, path, c, nil)
	defer closeStore()
	rec := newRecorder()
	r := runInformer(t, lw, Options{Store: st}, rec)
	defer r.stop() // before the store closes
	release := sync.OnceFunc(func() { close(lw.release) })
	defer release() // before the informer stops, should the test fail
	select {
	case <-lw.checkHeld: // the third failing check, held: two have been retried
	case <-lw.resumed:
		// The file is served as current: show what the handler is told.
		r.waitHandlersSynced(t)
		t.Fatalf("after a failed resume check, the watch resumed unchecked from the file's resourceVersion, ahead of the server's; the informer synced and the handler was told %v", rec.Snapshot())
	case <-time.After(30 * time.Second):
		t.Fatal("the resume check was not retried")
	}
	if got := rec.Snapshot(); len(got) != 0 {
		t.Fatalf("the handler was told %v while the resume check failed", got)
	}
	if r.inf.HasSynced() || r.regs[0].HasSynced() {
		t.Fatal("synced while the resume check failed")
	}
	release()
	r.waitHandlersSynced(t)
	want := []event{event("add ns/x@" + getPod(t, fresh, "x").ResourceVersion + " initial=true")}
	equalEvents(t, rec.Snapshot(), want)
	if keys := r.inf.GetStore().ListKeys(); len(keys) != 1 || keys[0] != "ns/x" {
		t.Fatalf("store keys %v after the relist, want [ns/x]", keys)
	}
	select {
	case <-lw.resumed:
		t.Fatal("watched from the file's resourceVersion, ahead of the server's")
	default:
	}
}

// TestCorruptionReportedDuringTheResumeCheckNeverReplaysTheFile
// (invariant 7): the store reports corrupt data (a lister's read, say)
// while the warm start waits for the resume check. The reflector is
// restarted to relist without checking the file against the server, so
// the file, which is ahead of the server here, must not be replayed
// either: the handler is told only the relisted objects.
func TestCorruptionReportedDuringTheResumeCheckNeverReplaysTheFile(t *testing.T) {
	path, c := writeFile(t, newSource(t, "a", "b", "c", "d", "e"))
	fresh := newSource(t, "x") // its resourceVersion is behind the file's
	lw := newGatedLW(fresh.Endpoint(podGVK, ""))
	st, closeStore := openBolt(t, path, c, nil)
	defer closeStore()
	rec := newRecorder()
	r := runInformer(t, lw, Options{Store: st}, rec)
	defer r.stop() // before the store closes
	awaitClosed(t, "the resume check", lw.listed)
	r.inf.ReportCorruption(errors.New("test: a lister read an undecodable object"))
	r.waitHandlersSynced(t)
	want := []event{event("add ns/x@" + getPod(t, fresh, "x").ResourceVersion + " initial=true")}
	equalEvents(t, rec.Snapshot(), want)
	if keys := r.inf.GetStore().ListKeys(); len(keys) != 1 || keys[0] != "ns/x" {
		t.Fatalf("store keys %v after the relist, want [ns/x]", keys)
	}
}

// rvCorruptStore is a store whose ResourceVersionOf finds key corrupt, as
// a bolt store does for a record whose checksum no longer matches.
type rvCorruptStore struct {
	store.Store
	key string
}

func (s rvCorruptStore) ResourceVersionOf(key string) (string, bool, error) {
	if key == s.key {
		return "", false, fmt.Errorf("item %q: %w", key, store.ErrCorrupt)
	}
	return s.Store.ResourceVersionOf(key)
}

// TestWarmStartRelistsWhenTheResumeCheckReadsCorruptData: the resume check
// of a small store reads every stored resourceVersion; one that is corrupt
// makes the informer relist, whether or not the store's OnCorruption is
// wired to it, and the handlers are told the server's state.
func TestWarmStartRelistsWhenTheResumeCheckReadsCorruptData(t *testing.T) {
	src := newSource(t, "a", "b", "c")
	mem := newMemStore(t)
	var objs []interface{}
	for _, o := range src.Objects(podGVK) {
		objs = append(objs, o)
	}
	if err := mem.Replace(objs, src.ResourceVersion()); err != nil {
		t.Fatal(err)
	}
	b := getPod(t, src, "b")
	b.Labels = map[string]string{"x": "y"}
	mustRV(t)(src.Update(b))
	before := src.Stats()
	rec := newRecorder()
	r := runInformer(t, src.Endpoint(podGVK, ""), Options{Store: rvCorruptStore{Store: mem, key: "ns/b"}}, rec)
	r.waitHandlersSynced(t)
	sameAsSource(t, mem, src)
	var want []event
	for _, name := range []string{"a", "b", "c"} {
		want = append(want, event("add ns/"+name+"@"+getPod(t, src, name).ResourceVersion+" initial=true"))
	}
	equalEvents(t, rec.Snapshot(), want)
	if after := src.Stats(); after.WatchLists+after.Lists-before.WatchLists-before.Lists < 2 {
		t.Errorf("%+v then %+v: want the resume check and a relist", before.Counts, after.Counts)
	}
}

// TestCaughtUpOnAStoreFoundIncompleteRelists: the store was found
// incomplete (a read marked it so) after the reflector had decided to
// resume: the warm start's Synced marker cannot complete the sync, since
// the handlers were told nothing; the informer relists.
func TestCaughtUpOnAStoreFoundIncompleteRelists(t *testing.T) {
	mem := newMemStore(t)
	inf := newTestInformer(t, Options{Store: incompleteStore{mem}})
	h := startHarness(t, inf)
	h.must(h.q.MarkSynced(h.ctx))
	h.waitBatch(func(b deltafifo.Batch) bool { return b.Kind == deltafifo.KindSynced })
	inf.mu.Lock()
	requested := inf.relistRequested && inf.forceRelist
	inf.mu.Unlock()
	if !requested || inf.HasSynced() {
		t.Fatalf("relist requested %v, synced %v; want a relist and no sync", requested, inf.HasSynced())
	}
}

// incompleteStore reports a state with objects that is not complete.
type incompleteStore struct{ store.Store }

func (s incompleteStore) State() (store.State, error) {
	return store.State{ResourceVersion: "10", Objects: 1}, nil
}
