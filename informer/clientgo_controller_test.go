package informer

// Ports of the informer-level tests of client-go's
// tools/cache/controller_test.go at v0.36.3: TestHammerController,
// TestUpdate, TestTransformingInformer, TestTransformingInformerRace and
// TestDeletionHandlingObjectToName, on the memory and the bolt store.
//
// Adapted: client-go's NewInformer and NewTransformingInformer are New
// (with SetTransform). TestHammerController's 100ms sleep before stopping
// is a barrier pod. TestUpdate's handler deletes a copy of the object it
// is given: the fake source sets the resourceVersion of the object it is
// handed, and the handler's object is the informer's, which nobody may
// mutate (the mutation detector, on in this package's tests, would report
// it; client-go's is off by default). Its ListWatch closes watchCh once
// only: the reflector may watch again. TestDeletionHandlingObjectToName
// calls cache.DeletionHandlingObjectToName on the
// cache.DeletedFinalStateUnknown the informer hands a handler for an
// object deleted while the watch was down, instead of on one built by
// hand.

import (
	"context"
	"fmt"
	"math/rand"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	testingclock "k8s.io/utils/clock/testing"
	"sigs.k8s.io/randfill"
)

// unsupportedWatchList is client-go's
// toListWatcherWithUnSupportedWatchListSemantics.
type unsupportedWatchList struct{ *cache.ListWatch }

func (unsupportedWatchList) IsWatchListSemanticsUnSupported() bool { return true }

func TestClientGoHammerController(t *testing.T) {
	forEachStore(t, func(t *testing.T, sk cgStore) {
		// This test executes a bunch of requests through the fake source
		// and controller framework to make sure there's no
		// locking/threading errors. If an error happens, it should hang
		// forever or trigger the race detector.

		// source simulates an apiserver object endpoint.
		source := newFakeControllerSource(t)

		// Let's do threadsafe output to get predictable test results.
		outputSetLock := sync.Mutex{}
		// map of key to operations done on the key
		outputSet := map[string][]string{}

		recordFunc := func(eventType string, obj interface{}) {
			key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
			if err != nil {
				t.Errorf("something wrong with key: %v", err)
				key = "oops something went wrong with the key"
			}

			// Record some output when items are deleted.
			outputSetLock.Lock()
			defer outputSetLock.Unlock()
			outputSet[key] = append(outputSet[key], eventType)
		}

		// Make a controller which just logs all the changes it gets.
		controller := newSharedInformer(t, sk, source, 100*time.Millisecond)
		if _, err := controller.AddEventHandler(cache.ResourceEventHandlerDetailedFuncs{
			AddFunc:    func(obj interface{}, isInInitialList bool) { recordFunc("add", obj) },
			UpdateFunc: func(oldObj, newObj interface{}) { recordFunc("update", newObj) },
			DeleteFunc: func(obj interface{}) { recordFunc("delete", obj) },
		}); err != nil {
			t.Fatal(err)
		}
		witness := newTestListener("witness", 0)
		if _, err := controller.AddEventHandler(witness); err != nil {
			t.Fatal(err)
		}

		if controller.HasSynced() {
			t.Errorf("Expected HasSynced() to return false before we started the controller")
		}

		// Run the controller and run it until we cancel.
		stop := runUntil(t, controller)

		// Let's wait for the controller to do its initial sync
		waitDone(t, "informer", controller.HasSyncedChecker())

		wg := sync.WaitGroup{}
		const threads = 3
		for i := 0; i < threads; i++ {
			wg.Go(func() {
				// Let's add a few objects to the source.
				currentNames := sets.Set[string]{}
				rs := rand.NewSource(rand.Int63())
				f := randfill.New().NilChance(.5).NumElements(0, 2).RandSource(rs)
				for i := 0; i < 100; i++ {
					var name string
					var isNew bool
					if currentNames.Len() == 0 || rand.Intn(3) == 1 {
						f.Fill(&name)
						isNew = true
					} else {
						l := sets.List(currentNames)
						name = l[rand.Intn(len(l))]
					}

					pod := &v1.Pod{}
					f.Fill(pod)
					pod.ObjectMeta.Name = name
					pod.ObjectMeta.Namespace = "default"
					// Add, update, or delete randomly.
					// Note that these pods are not valid-- the fake
					// source doesn't call validation or perform any
					// other checking.
					if isNew {
						currentNames.Insert(name)
						source.Add(pod)
						continue
					}
					switch rand.Intn(2) {
					case 0:
						currentNames.Insert(name)
						source.Modify(pod)
					case 1:
						currentNames.Delete(name)
						source.Delete(pod)
					}
				}
			})
		}
		wg.Wait()

		// Let's wait for the controller to finish processing the things
		// we just added.
		(&barrier{source: source}).pass(t, witness)
		stop()

		outputSetLock.Lock()
		defer outputSetLock.Unlock()
		t.Logf("got: %#v", outputSet)
	})
}

func TestClientGoUpdate(t *testing.T) {
	forEachStore(t, func(t *testing.T, sk cgStore) {
		// This test is going to exercise the various paths that result in
		// a call to update.

		// source simulates an apiserver object endpoint.
		source := newFakeControllerSource(t)

		const (
			FROM = "from"
			TO   = "to"
		)

		// These are the transitions we expect to see; because this is
		// asynchronous, there are a lot of valid possibilities.
		type pair struct{ from, to string }
		allowedTransitions := map[pair]bool{
			{FROM, TO}: true,

			// Because a resync can happen when we've already observed one
			// of the above but before the item is deleted.
			{TO, TO}: true,
			// Because a resync could happen before we observe an update.
			{FROM, FROM}: true,
		}

		pod := func(name, check string, final bool) *v1.Pod {
			p := &v1.Pod{
				ObjectMeta: metav1.ObjectMeta{
					Name:   name,
					Labels: map[string]string{"check": check},
				},
			}
			if final {
				p.Labels["final"] = "true"
			}
			return p
		}
		deletePod := func(p *v1.Pod) bool {
			return p.Labels["final"] == "true"
		}

		tests := []func(string){
			func(name string) {
				name = "a-" + name
				source.Add(pod(name, FROM, false))
				source.Modify(pod(name, TO, true))
			},
		}

		const threads = 3

		var testDoneWG sync.WaitGroup
		testDoneWG.Add(threads * len(tests))

		// Make a controller that deletes things once it observes an
		// update. It calls Done() on the wait group on deletions so we can
		// tell when everything we've added has been deleted.
		watchCh := make(chan struct{})
		var watchOnce sync.Once
		controller := newSharedInformer(t, sk, unsupportedWatchList{&cache.ListWatch{
			WatchFunc: func(options metav1.ListOptions) (watch.Interface, error) {
				watch, err := source.Watch(options)
				watchOnce.Do(func() { close(watchCh) })
				return watch, err
			},
			ListFunc: func(options metav1.ListOptions) (runtime.Object, error) {
				return source.List(options)
			},
		}}, 0)
		if _, err := controller.AddEventHandler(cache.ResourceEventHandlerFuncs{
			UpdateFunc: func(oldObj, newObj interface{}) {
				o, n := oldObj.(*v1.Pod), newObj.(*v1.Pod)
				from, to := o.Labels["check"], n.Labels["check"]
				if !allowedTransitions[pair{from, to}] {
					t.Errorf("observed transition %q -> %q for %v", from, to, n.Name)
				}
				if deletePod(n) {
					source.Delete(n.DeepCopy())
				}
			},
			DeleteFunc: func(obj interface{}) {
				testDoneWG.Done()
			},
		}); err != nil {
			t.Fatal(err)
		}

		// Run the controller and run it until we cancel.
		// Once Run() is called, calls to testDoneWG.Done() might start,
		// so all testDoneWG.Add() calls must happen before this point
		runUntil(t, controller)
		<-watchCh

		// run every test a few times, in parallel
		var wg sync.WaitGroup
		for i := 0; i < threads; i++ {
			for j, f := range tests {
				name := fmt.Sprintf("%v-%v", i, j)
				wg.Go(func() { f(name) })
			}
		}
		wg.Wait()

		// Let's wait for the controller to process the things we just
		// added.
		testDoneWG.Wait()
	})
}

func TestClientGoTransformingInformer(t *testing.T) {
	forEachStore(t, func(t *testing.T, sk cgStore) {
		// source simulates an apiserver object endpoint.
		source := newFakeControllerSource(t)

		makePod := func(name, generation string) *v1.Pod {
			return &v1.Pod{
				ObjectMeta: metav1.ObjectMeta{
					Name:      name,
					Namespace: "namespace",
					Labels:    map[string]string{"generation": generation},
				},
				Spec: v1.PodSpec{
					Hostname:  "hostname",
					Subdomain: "subdomain",
				},
			}
		}
		expectedPod := func(name, generation string) *v1.Pod {
			pod := makePod(name, generation)
			pod.Spec.Hostname = "new-hostname"
			pod.Spec.Subdomain = ""
			pod.Spec.NodeName = "nodename"
			return pod
		}

		source.Add(makePod("pod1", "1"))
		source.Modify(makePod("pod1", "2"))

		type event struct {
			eventType watch.EventType
			previous  interface{}
			current   interface{}
		}
		events := make(chan event, 10)
		recordEvent := func(eventType watch.EventType, previous, current interface{}) {
			events <- event{eventType: eventType, previous: previous, current: current}
		}
		verifyEvent := func(eventType watch.EventType, previous, current interface{}) {
			t.Helper()
			select {
			case event := <-events:
				if event.eventType != eventType {
					t.Errorf("expected type %v, got %v", eventType, event.eventType)
				}
				if !apiequality.Semantic.DeepEqual(event.previous, previous) {
					t.Errorf("expected previous object %#v, got %#v", previous, event.previous)
				}
				if !apiequality.Semantic.DeepEqual(event.current, current) {
					t.Errorf("expected object %#v, got %#v", current, event.current)
				}
			case <-time.After(wait.ForeverTestTimeout):
				t.Errorf("failed to get event")
			}
		}

		podTransformer := func(obj interface{}) (interface{}, error) {
			pod, ok := obj.(*v1.Pod)
			if !ok {
				return nil, fmt.Errorf("unexpected object type: %T", obj)
			}
			pod.Spec.Hostname = "new-hostname"
			pod.Spec.Subdomain = ""
			pod.Spec.NodeName = "nodename"

			// Clear out ResourceVersion to simplify comparisons.
			pod.ResourceVersion = ""

			return pod, nil
		}

		controller := newSharedInformer(t, sk, source, 0)
		if err := controller.SetTransform(podTransformer); err != nil {
			t.Fatal(err)
		}
		if _, err := controller.AddEventHandler(cache.ResourceEventHandlerDetailedFuncs{
			AddFunc:    func(obj interface{}, isInInitialList bool) { recordEvent(watch.Added, nil, obj) },
			UpdateFunc: func(oldObj, newObj interface{}) { recordEvent(watch.Modified, oldObj, newObj) },
			DeleteFunc: func(obj interface{}) { recordEvent(watch.Deleted, obj, nil) },
		}); err != nil {
			t.Fatal(err)
		}
		store := controller.GetStore()

		verifyStore := func(expectedItems []interface{}) {
			t.Helper()
			items := store.List()
			if len(items) != len(expectedItems) {
				t.Errorf("unexpected items %v, expected %v", items, expectedItems)
			}
			for _, expectedItem := range expectedItems {
				found := false
				for _, item := range items {
					if apiequality.Semantic.DeepEqual(item, expectedItem) {
						found = true
					}
				}
				if !found {
					t.Errorf("expected item %v not found in %v", expectedItem, items)
				}
			}
		}

		runUntil(t, controller)

		verifyEvent(watch.Added, nil, expectedPod("pod1", "2"))
		verifyStore([]interface{}{expectedPod("pod1", "2")})

		source.Add(makePod("pod2", "1"))
		verifyEvent(watch.Added, nil, expectedPod("pod2", "1"))
		verifyStore([]interface{}{expectedPod("pod1", "2"), expectedPod("pod2", "1")})

		source.Add(makePod("pod3", "1"))
		verifyEvent(watch.Added, nil, expectedPod("pod3", "1"))

		source.Modify(makePod("pod2", "2"))
		verifyEvent(watch.Modified, expectedPod("pod2", "1"), expectedPod("pod2", "2"))

		source.Delete(makePod("pod1", "2"))
		verifyEvent(watch.Deleted, expectedPod("pod1", "2"), nil)
		verifyStore([]interface{}{expectedPod("pod2", "2"), expectedPod("pod3", "1")})
	})
}

func TestClientGoDeletionHandlingObjectToName(t *testing.T) {
	forEachStore(t, func(t *testing.T, sk cgStore) {
		source := newFakeControllerSource(t)
		p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "testname", Namespace: "testnamespace"}}
		source.Add(p)

		informer := newSharedInformer(t, sk, source, 0)
		deleted := make(chan interface{}, 1)
		if _, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
			DeleteFunc: func(obj interface{}) { deleted <- obj },
		}); err != nil {
			t.Fatal(err)
		}
		runUntil(t, informer)
		waitDone(t, "informer", informer.HasSyncedChecker())

		// Deleted while the watch is down: the relist tells it with the
		// last state the informer knew.
		source.DeleteDropWatch(p.DeepCopy())
		source.ResetWatch()
		var obj interface{}
		select {
		case obj = <-deleted:
		case <-time.After(wait.ForeverTestTimeout):
			t.Fatal("no delete")
		}
		d, ok := obj.(cache.DeletedFinalStateUnknown)
		if !ok {
			t.Fatalf("deleted %T, want cache.DeletedFinalStateUnknown", obj)
		}
		stringKey, err := cache.MetaNamespaceKeyFunc(p)
		if err != nil {
			t.Error(err)
		}
		if d.Key != stringKey {
			t.Errorf("tombstone key %q, want %q", d.Key, stringKey)
		}
		expected, err := cache.ObjectToName(p)
		if err != nil {
			t.Error(err)
		}
		actual, err := cache.DeletionHandlingObjectToName(d)
		if err != nil {
			t.Error(err)
		}
		if expected != actual {
			t.Errorf("Expected %#v, got %#v", expected, actual)
		}
	})
}

// TestClientGoTransformingInformerRace is client-go's
// TestTransformingInformerRace: resyncs must not transform stored objects
// again, nor race with readers of the store. Adapted: client-go resyncs
// every 5ms (a shared informer raises it to 1s) for a second of real time;
// here the informer's fake clock is stepped through five resyncs, each
// awaited.
func TestClientGoTransformingInformerRace(t *testing.T) {
	forEachStore(t, func(t *testing.T, sk cgStore) {
		// Canceled *only* when the test is done.
		testCtx, cancelTest := context.WithCancel(context.Background())
		defer cancelTest()
		// Canceled *also* during the test.
		ctx, cancel := context.WithCancel(testCtx)
		defer cancel()

		// source simulates an apiserver object endpoint.
		source := newFakeControllerSource(t)

		label := "to-be-transformed"
		makePod := func(name string) *v1.Pod {
			return &v1.Pod{
				ObjectMeta: metav1.ObjectMeta{
					Name:      name,
					Namespace: "namespace",
					Labels:    map[string]string{label: "true"},
				},
				Spec: v1.PodSpec{
					Hostname: "hostname",
				},
			}
		}

		badTransform := atomic.Bool{}
		podTransformer := func(obj interface{}) (interface{}, error) {
			pod, ok := obj.(*v1.Pod)
			if !ok {
				return nil, fmt.Errorf("unexpected object type: %T", obj)
			}
			if pod.ObjectMeta.Labels[label] != "true" {
				badTransform.Store(true)
				return nil, fmt.Errorf("object already transformed: %#v", obj)
			}
			pod.ObjectMeta.Labels[label] = "false"
			return pod, nil
		}

		numObjs := 5
		for i := 0; i < numObjs; i++ {
			source.Add(makePod(fmt.Sprintf("pod-%d", i)))
		}

		type event struct{}
		events := make(chan event, numObjs)
		recordEvent := func(eventType watch.EventType, previous, current interface{}) {
			select {
			case events <- event{}:
			case <-testCtx.Done():
				// Don't block forever in the write above when test is
				// already done.
			}
		}
		checkEvents := func(count int) {
			for i := 0; i < count; i++ {
				select {
				case <-events:
				case <-time.After(wait.ForeverTestTimeout):
					t.Fatalf("%d of %d events", i, count)
				}
			}
		}
		clock := testingclock.NewFakeClock(time.Now())
		controller := newInformer(t, source, Options{Store: sk.open(t), ResyncPeriod: time.Second, Clock: clock})
		if err := controller.SetTransform(podTransformer); err != nil {
			t.Fatal(err)
		}
		if _, err := controller.AddEventHandler(cache.ResourceEventHandlerDetailedFuncs{
			AddFunc:    func(obj interface{}, isInInitialList bool) { recordEvent(watch.Added, nil, obj) },
			UpdateFunc: func(oldObj, newObj interface{}) { recordEvent(watch.Modified, oldObj, newObj) },
			DeleteFunc: func(obj interface{}) { recordEvent(watch.Deleted, obj, nil) },
		}); err != nil {
			t.Fatal(err)
		}
		store := controller.GetStore()

		stop := runUntil(t, controller)
		defer stop()

		checkEvents(numObjs)

		// Periodically fetch objects to ensure no access races.
		wg := sync.WaitGroup{}
		errors := make(chan error, numObjs)
		for i := 0; i < numObjs; i++ {
			key := fmt.Sprintf("namespace/pod-%d", i)
			wg.Go(func() {
				for {
					select {
					case <-ctx.Done():
						return
					default:
					}

					obj, ok, err := store.GetByKey(key)
					if !ok || err != nil {
						errors <- fmt.Errorf("couldn't get the object for %v", key)
						return
					}
					pod := obj.(*v1.Pod)
					if pod.ObjectMeta.Labels[label] != "false" {
						errors <- fmt.Errorf("unexpected object: %#v", pod)
						return
					}
				}
			})
		}

		// Let resyncs happen.
		waitTickers(t, controller, clock)
		for range 5 {
			clock.Step(time.Second)
			checkEvents(numObjs)
		}

		cancel()
		wg.Wait()
		close(errors)
		for err := range errors {
			t.Error(err)
		}

		if badTransform.Load() {
			t.Errorf("unexpected transformation happened")
		}
	})
}
