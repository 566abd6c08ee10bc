package informer

// Ports of client-go's tools/cache/controller_test.go at v0.36.3:
// TestResetWatch, TestStoreResourceVersion and
// TestStoreResourceVersionWithNonMetaTransform, at the informer's level.
//
// Adapted: client-go builds a controller from a RealFIFO, a store and its
// processDeltas (atomic or not); here the informer runs its own pipeline
// on the memory and the bolt store, and the recorder is a handler reading
// GetStore. Beyond client-go's assertions, the recorder checks that the
// store holds each live event's object when the handler is told
// (listers never lag a notification). The non-meta transform (objects
// stored as strings) runs on the memory store only: a bolt store holds
// runtime.Objects of its resource; the store's resourceVersion follows
// the watch there, where client-go's stays at the last one it could read
// from a transformed object.

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/warmcache/warmcache/store/memory"
)

type eventRecord struct {
	Action          string
	Key             string
	EventRV         string
	StoreRV         string
	IsInInitialList bool
}

// eventRecorder is client-go's: a handler recording each notification
// with its object's resourceVersion and the stored one's.
type eventRecorder struct {
	historyLock sync.Mutex
	history     []eventRecord
	store       cache.Store
	keyFunc     cache.KeyFunc

	updateCh chan bool
}

func newEventRecorder(store cache.Store, keyFunc cache.KeyFunc) *eventRecorder {
	return &eventRecorder{store: store, updateCh: make(chan bool, 1), keyFunc: keyFunc}
}

func (m *eventRecorder) OnAdd(obj interface{}, isInInitialList bool) {
	m.record("add", obj, isInInitialList)
}
func (m *eventRecorder) OnUpdate(_, obj interface{}) { m.record("update", obj, false) }
func (m *eventRecorder) OnDelete(obj interface{})    { m.record("delete", obj, false) }

func (m *eventRecorder) record(action string, obj interface{}, isInInitialList bool) {
	m.historyLock.Lock()
	defer m.historyLock.Unlock()
	key, _ := m.keyFunc(obj)

	if deleted, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = deleted.Obj
	}

	eventRV := ""
	if accessor, err := meta.Accessor(obj); err == nil {
		eventRV = accessor.GetResourceVersion()
	}

	storeRV := ""
	if storeObj, exists, err := m.store.GetByKey(key); err == nil && exists {
		if accessor, err := meta.Accessor(storeObj); err == nil {
			storeRV = accessor.GetResourceVersion()
		}
	}

	m.history = append(m.history, eventRecord{
		Action:          action,
		Key:             key,
		EventRV:         eventRV,
		StoreRV:         storeRV,
		IsInInitialList: isInInitialList,
	})
	select {
	case m.updateCh <- true:
	default:
	}
}

func (m *eventRecorder) clearHistory() {
	m.historyLock.Lock()
	defer m.historyLock.Unlock()
	m.history = []eventRecord{}
}

func (m *eventRecorder) getHistory() []eventRecord {
	m.historyLock.Lock()
	defer m.historyLock.Unlock()
	return append([]eventRecord(nil), m.history...)
}

func (m *eventRecorder) waitForEventCount(ctx context.Context, count int, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		m.historyLock.Lock()
		currentCount := len(m.history)
		m.historyLock.Unlock()
		if currentCount >= count {
			return nil
		}
		select {
		case <-m.updateCh:
		case <-ctx.Done():
			return fmt.Errorf("context canceled waiting for %d events, currently have %d", count, currentCount)
		}
	}
}

// mustEvents waits for count events and returns them, failing the test
// if they do not come.
func (m *eventRecorder) mustEvents(t *testing.T, count int, what string) []eventRecord {
	t.Helper()
	if err := m.waitForEventCount(context.Background(), count, 30*time.Second); err != nil {
		t.Fatalf("%s: %v, got: %v", what, err, m.getHistory())
	}
	history := m.getHistory()
	if len(history) != count {
		t.Fatalf("%s: %d events, want %d: %v", what, len(history), count, history)
	}
	return history
}

// runRecorded runs an informer on source with a recorder as its handler.
func runRecorded(t *testing.T, sk cgStore, source cache.ListerWatcher) (*Informer, *eventRecorder) {
	t.Helper()
	informer := newSharedInformer(t, sk, source, 0)
	recorder := newEventRecorder(informer.GetStore(), cache.DeletionHandlingMetaNamespaceKeyFunc)
	if _, err := informer.AddEventHandler(recorder); err != nil {
		t.Fatal(err)
	}
	runUntil(t, informer)
	waitDone(t, "informer", informer.HasSyncedChecker())
	return informer, recorder
}

func TestClientGoResetWatch(t *testing.T) {
	forEachStore(t, func(t *testing.T, sk cgStore) {
		source := newFakeControllerSource(t)
		source.Add(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pod-1", Namespace: "default"}})
		_, recorder := runRecorded(t, sk, source)

		// The first event should be the initial add.
		history := recorder.mustEvents(t, 1, "initial add")
		if h := history[0]; h.Action != "add" || h.Key != "default/pod-1" || !h.IsInInitialList {
			t.Errorf("initial event %+v, want an initial add of default/pod-1", h)
		}

		recorder.clearHistory()
		source.ModifyDropWatch(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pod-1", Namespace: "default"}})
		source.AddDropWatch(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pod-2", Namespace: "default"}})
		source.ResetWatch()

		// We should get an add for the second pod and update for the
		// initial pod on reset.
		history = recorder.mustEvents(t, 2, "relist")
		var addEvent, updateEvent eventRecord
		for _, event := range history {
			switch event.Action {
			case "update":
				updateEvent = event
			case "add":
				addEvent = event
			}
		}
		if updateEvent.Key != "default/pod-1" || updateEvent.IsInInitialList {
			t.Errorf("update %+v, want one of default/pod-1 not in the initial list", updateEvent)
		}
		if addEvent.Key != "default/pod-2" || addEvent.IsInInitialList {
			t.Errorf("add %+v, want one of default/pod-2 not in the initial list", addEvent)
		}
		for _, e := range history {
			if e.StoreRV != e.EventRV {
				t.Errorf("%s of %s told with %s stored", e.Action, e.EventRV, e.StoreRV)
			}
		}
	})
}

func TestClientGoStoreResourceVersion(t *testing.T) {
	forEachStore(t, func(t *testing.T, sk cgStore) {
		source := newFakeControllerSource(t)
		source.Add(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pod-1", Namespace: "default"}})
		informer, recorder := runRecorded(t, sk, source)
		store := informer.GetStore()

		// The first event should be the initial add.
		history := recorder.mustEvents(t, 1, "initial add")
		if h := history[0]; h.Action != "add" || h.Key != "default/pod-1" || !h.IsInInitialList {
			t.Errorf("initial event %+v, want an initial add of default/pod-1", h)
		}

		recorder.clearHistory()
		// Update the pod labels to increment the resource version.
		source.Modify(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pod-1", Namespace: "default", Labels: map[string]string{"foo": "bar"}}})
		history = recorder.mustEvents(t, 1, "update")
		// The stored resource version should have changed.
		if rv := store.LastStoreSyncResourceVersion(); history[0].EventRV != rv {
			t.Errorf("store's resourceVersion %q after the update of %q", rv, history[0].EventRV)
		}
		if history[0].StoreRV != history[0].EventRV {
			t.Errorf("update of %s told with %s stored", history[0].EventRV, history[0].StoreRV)
		}

		recorder.clearHistory()
		// Delete the pod.
		source.Delete(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pod-1", Namespace: "default"}})
		history = recorder.mustEvents(t, 1, "delete")
		// The stored resource version should have changed.
		if rv := store.LastStoreSyncResourceVersion(); history[0].EventRV != rv {
			t.Errorf("store's resourceVersion %q after the delete of %q", rv, history[0].EventRV)
		}
		if history[0].StoreRV != "" {
			t.Errorf("delete told with the object still stored at %s", history[0].StoreRV)
		}
	})
}

func TestClientGoStoreResourceVersionWithNonMetaTransform(t *testing.T) {
	source := newFakeControllerSource(t)
	source.Add(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pod-1", Namespace: "default"}})

	// Create a keyfunc that does not rely on object metadata.
	keyFunc := func(obj interface{}) (string, error) {
		return "pod-1", nil
	}
	st, err := memory.New(memory.Options{KeyFunc: keyFunc})
	if err != nil {
		t.Fatal(err)
	}
	informer := newInformer(t, source, Options{Store: st})
	if err := informer.SetTransform(func(obj interface{}) (interface{}, error) {
		pod, ok := obj.(*v1.Pod)
		if !ok {
			return nil, fmt.Errorf("expected *v1.Pod, got %T", obj)
		}
		return pod.Name, nil
	}); err != nil {
		t.Fatal(err)
	}
	recorder := newEventRecorder(st, keyFunc)
	if _, err := informer.AddEventHandler(recorder); err != nil {
		t.Fatal(err)
	}
	runUntil(t, informer)
	waitDone(t, "informer", informer.HasSyncedChecker())

	// The first event should be the initial add.
	history := recorder.mustEvents(t, 1, "initial add")
	if h := history[0]; h.Action != "add" || h.Key != "pod-1" || !h.IsInInitialList {
		t.Errorf("initial event %+v, want an initial add of pod-1", h)
	}

	if rv := st.LastStoreSyncResourceVersion(); rv != "1" {
		t.Errorf("store's resourceVersion %q after the list, want \"1\"", rv)
	}
	recorder.clearHistory()
	// Update the pod labels to increment the resource version.
	source.Modify(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pod-1", Namespace: "default", Labels: map[string]string{"foo": "bar"}}})
	recorder.mustEvents(t, 1, "update")
	// Adapted: client-go's store keeps the list's resourceVersion here,
	// since the transformed update has no metadata to read one from. This
	// informer's store records the watch's progress, read from the event
	// before the transform: the resourceVersion a warm start resumes from
	// (see the package documentation).
	if rv := st.LastStoreSyncResourceVersion(); rv != "2" {
		t.Errorf("store's resourceVersion %q after the update at 2", rv)
	}

	recorder.clearHistory()
	// Modify the pod but do not send the event.
	source.ModifyDropWatch(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pod-1", Namespace: "default", Labels: map[string]string{"foo": "bar2"}}})
	// Trigger a replace by resetting the watch
	source.ResetWatch()

	recorder.mustEvents(t, 1, "relist")
	// The stored resource version should be updated to the replace
	// events RV.
	if rv := st.LastStoreSyncResourceVersion(); rv != "3" {
		t.Errorf("store's resourceVersion %q after the relist, want \"3\"", rv)
	}
}
