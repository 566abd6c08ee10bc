package informer

// Helpers of the clientgo_*_test.go files, which port client-go's shared
// informer tests (k8s.io/client-go/tools/cache at v0.36.3) to this
// package: its testListener, its fake controller source
// (k8s.io/client-go/tools/cache/testing) as the ListerWatcher, and a table
// of the two stores every ported test whose outcome depends on the store
// runs on.
//
// Adapted throughout: client-go's testListener.ok waits one second for
// stragglers after the expected names arrived; here a barrier pod is
// added to the source instead, and ok returns once every listener was
// handed it. Each handler is told the changes in the order the informer
// applied them, so anything queued before the barrier has been delivered
// by then. Barrier pods are left out of what a listener records, so
// client-go's expectations stay as they are.

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
	fcache "k8s.io/client-go/tools/cache/testing"

	"github.com/warmcache/warmcache/store"
)

// cgStore is one kind of store a ported test runs on.
type cgStore struct {
	name string
	// decoded is true when the store hands out decoded copies (bolt):
	// the objects a handler gets are not the pointers the source listed
	// or sent, so only their content can be compared.
	decoded bool
	// open returns a new, empty store, closed at the end of the test
	// (after the informers started later, whose cleanups run first).
	open func(t *testing.T) store.Store
}

var cgStores = []cgStore{
	{name: "memory", open: newMemStore},
	{name: "bolt", decoded: true, open: func(t *testing.T) store.Store {
		st, closeStore := openBolt(t, filepath.Join(t.TempDir(), "cache.db"), nil, nil)
		t.Cleanup(closeStore)
		return st
	}},
}

// forEachStore runs body as a subtest on each store.
func forEachStore(t *testing.T, body func(t *testing.T, sk cgStore)) {
	for _, sk := range cgStores {
		t.Run(sk.name, func(t *testing.T) { body(t, sk) })
	}
}

// newFakeControllerSource is client-go's: the source is shut down at the
// end of the test, after the informers that use it have stopped.
func newFakeControllerSource(t *testing.T) *fcache.FakeControllerSource {
	source := fcache.NewFakeControllerSource()
	t.Cleanup(source.Shutdown)
	return source
}

// newSharedInformer is client-go's NewSharedInformer(source, &v1.Pod{},
// resync) on a new store of kind sk.
func newSharedInformer(t *testing.T, sk cgStore, source cache.ListerWatcher, resync time.Duration) *Informer {
	t.Helper()
	return newInformer(t, source, Options{Store: sk.open(t), ResyncPeriod: resync})
}

// runUntil runs inf until the returned function is called (or the test
// ends); that function returns once RunWithContext has returned.
func runUntil(t *testing.T, inf *Informer) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		inf.RunWithContext(ctx)
	}()
	stop = func() {
		cancel()
		<-done
	}
	t.Cleanup(stop)
	return stop
}

// barrierPrefix names the barrier pods, which testListeners do not record.
const barrierPrefix = "zz-barrier-"

// testListener is client-go's: it records the names of the objects it is
// told about by adds and updates.
type testListener struct {
	lock              sync.RWMutex
	resyncPeriod      time.Duration
	expectedItemNames sets.Set[string]
	receivedItemNames []string
	name              string
	// barriers are the barrier pods seen.
	barriers sets.Set[string]
}

func newTestListener(name string, resyncPeriod time.Duration, expected ...string) *testListener {
	return &testListener{
		resyncPeriod:      resyncPeriod,
		expectedItemNames: sets.New(expected...),
		name:              name,
		barriers:          sets.New[string](),
	}
}

func (l *testListener) OnAdd(obj interface{}, isInInitialList bool) { l.handle(obj) }
func (l *testListener) OnUpdate(old, new interface{})               { l.handle(new) }
func (l *testListener) OnDelete(obj interface{})                    {}

func (l *testListener) handle(obj interface{}) {
	objectMeta, _ := meta.Accessor(obj)
	l.lock.Lock()
	defer l.lock.Unlock()
	// Lower case: a transform may have changed the barrier's name.
	if name := strings.ToLower(objectMeta.GetName()); strings.HasPrefix(name, barrierPrefix) {
		l.barriers.Insert(name)
		return
	}
	l.receivedItemNames = append(l.receivedItemNames, objectMeta.GetName())
}

func (l *testListener) satisfiedExpectations() bool {
	l.lock.RLock()
	defer l.lock.RUnlock()
	return sets.New(l.receivedItemNames...).Equal(l.expectedItemNames)
}

func (l *testListener) received() []string {
	l.lock.RLock()
	defer l.lock.RUnlock()
	return append([]string(nil), l.receivedItemNames...)
}

func (l *testListener) sawBarrier(name string) bool {
	l.lock.RLock()
	defer l.lock.RUnlock()
	return l.barriers.Has(name)
}

func (l *testListener) reset() {
	l.lock.Lock()
	defer l.lock.Unlock()
	l.receivedItemNames = nil
}

func (l *testListener) setExpected(names ...string) {
	l.lock.Lock()
	defer l.lock.Unlock()
	l.expectedItemNames = sets.New(names...)
}

// barrier adds barrier pods to a source.
type barrier struct {
	source *fcache.FakeControllerSource
	n      int
}

// pass adds a barrier pod to the source and waits until each of
// witnesses was handed it.
func (b *barrier) pass(t *testing.T, witnesses ...*testListener) {
	t.Helper()
	b.n++
	name := fmt.Sprintf("%s%d", barrierPrefix, b.n)
	b.source.Add(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}})
	err := wait.PollUntilContextTimeout(context.Background(), time.Millisecond, wait.ForeverTestTimeout, true, func(context.Context) (bool, error) {
		for _, l := range witnesses {
			if !l.sawBarrier(name) {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("barrier %s not seen by every listener: %v", name, err)
	}
}

// ok is client-go's testListener.ok for a group of listeners: it waits
// until each has received its expected names, then passes a barrier seen
// by witnesses (all of them if none are given) and reports whether each
// listener still has exactly its expected names. It reports the
// listeners that do not on t.
func (b *barrier) ok(t *testing.T, listeners []*testListener, witnesses ...*testListener) bool {
	t.Helper()
	_ = wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, wait.ForeverTestTimeout, true, func(context.Context) (bool, error) {
		for _, l := range listeners {
			if !l.satisfiedExpectations() {
				return false, nil
			}
		}
		return true, nil
	})
	if len(witnesses) == 0 {
		witnesses = listeners
	}
	b.pass(t, witnesses...)
	ok := true
	for _, l := range listeners {
		if !l.satisfiedExpectations() {
			t.Errorf("%s: expected %v, got %v", l.name, sets.List(l.expectedItemNames), l.received())
			ok = false
		}
	}
	return ok
}

// eventHandlerCount is client-go's: the number of registered handlers.
func eventHandlerCount(i *Informer) int {
	i.proc.mu.RLock()
	defer i.proc.mu.RUnlock()
	return len(i.proc.listeners)
}

// isRegistered is client-go's: whether h is a handler of i.
func isRegistered(i *Informer, h cache.ResourceEventHandlerRegistration) bool {
	l, ok := h.(*listener)
	return ok && i.proc.has(l)
}
