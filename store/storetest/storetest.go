// Package storetest is the contract test suite every store.Store
// implementation runs: client-go's cache.Indexer and cache.TransactionStore
// semantics, and warmcache's persistence additions (Apply, State,
// BeginReplace, Scan, ScanIndex, ResourceVersionOf, Close, and the optional
// store.Filler).
//
// A store's tests call Run with a function that opens a new, empty store:
//
//	func TestContract(t *testing.T) {
//		storetest.Run(t, func(t *testing.T, indexers cache.Indexers) store.Store {
//			s, err := mystore.New(mystore.Options{Indexers: indexers})
//			if err != nil {
//				t.Fatal(err)
//			}
//			return s
//		})
//	}
//
// The suite stores *corev1.Pod objects only, so that a store which encodes
// objects can run it, and compares what it reads back with
// apiequality.Semantic.DeepEqual, never by pointer identity.
//
// RunClientGo runs client-go's own tests of tools/cache (store_test.go,
// index_test.go, thread_safe_store_test.go and listers_test.go at v0.36.3)
// on a store opened with their key functions and indexers, with the plain
// structs they store where the store holds any value and with pods
// carrying the same ids and values otherwise. The cases Run covers are
// not repeated; clientgo_threadsafe.go names where they are.
package storetest

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/warmcache/warmcache/store"
)

// Run runs the contract suite as subtests of t, grouped by area
// (Indexer, Index, ResourceVersion, Transaction, Apply, State, Replace,
// Fill, Scan, Close, Concurrency), so one area can be selected with -run.
// The Fill tests run on stores that implement store.Filler only.
//
// newStore must return a new, empty store using the default key function
// (cache.DeletionHandlingMetaNamespaceKeyFunc) and exactly the given
// indexers; it may call t.Fatal and register cleanups (t.TempDir). Run
// checks every store it opened with CheckConsistent when its subtest ends,
// then closes it; a store that a subtest closed itself is closed again, so
// a second Close must return nil or an error wrapping store.ErrClosed.
func Run(t *testing.T, newStore func(t *testing.T, indexers cache.Indexers) store.Store) {
	h := harness{newStore: newStore}
	for _, g := range suite {
		t.Run(g.name, func(t *testing.T) {
			for _, tc := range g.tests {
				t.Run(tc.name, func(t *testing.T) { tc.fn(t, h) })
			}
		})
	}
}

type namedTest struct {
	name string
	fn   func(t *testing.T, h harness)
}

type harness struct {
	newStore func(t *testing.T, indexers cache.Indexers) store.Store
}

// open returns a new store with the given indexers (the suite's default
// ones when nil), holding objs (added one by one), that is checked and
// closed when the test ends.
func (h harness) open(t *testing.T, indexers cache.Indexers, objs ...*corev1.Pod) store.Store {
	t.Helper()
	if indexers == nil {
		indexers = defaultIndexers()
	}
	s := checkedAtEnd(t, h.newStore(t, indexers))
	mustAdd(t, s, objs...)
	return s
}

// checkedAtEnd fails t if s is nil, and otherwise has s checked
// (CheckConsistent, unless t failed or s is unreadable) and closed when t
// ends. It returns s.
func checkedAtEnd(t *testing.T, s store.Store) store.Store {
	t.Helper()
	if s == nil {
		t.Fatal("the store constructor returned nil")
	}
	t.Cleanup(func() {
		if _, err := s.State(); err == nil && !t.Failed() {
			CheckConsistent(t, s)
		}
		if err := s.Close(); err != nil && !errors.Is(err, store.ErrClosed) {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

// Index names and functions of the suite.
const (
	// indexNamespace is client-go's namespace index.
	indexNamespace = cache.NamespaceIndex
	// indexUsers files a pod under every name in its "users" annotation
	// (comma separated) and under none when it has no such annotation.
	indexUsers = "byUser"
	// indexPicky fails for pods annotated annotationReject.
	indexPicky = "picky"

	annotationUsers  = "storetest.warmcache.io/users"
	annotationReject = "storetest.warmcache.io/reject"
)

// errRejected is the error indexPicky's function returns.
var errRejected = errors.New("storetest: the picky index rejects this pod")

func defaultIndexers() cache.Indexers {
	return cache.Indexers{indexNamespace: cache.MetaNamespaceIndexFunc, indexUsers: usersIndexFunc}
}

// pickyIndexers are the default indexers plus indexPicky.
func pickyIndexers() cache.Indexers {
	ix := defaultIndexers()
	ix[indexPicky] = pickyIndexFunc
	return ix
}

func usersIndexFunc(obj interface{}) ([]string, error) {
	m, err := metaOf(obj)
	if err != nil {
		return nil, err
	}
	users := m.GetAnnotations()[annotationUsers]
	if users == "" {
		return nil, nil
	}
	return strings.Split(users, ","), nil
}

func pickyIndexFunc(obj interface{}) ([]string, error) {
	m, err := metaOf(obj)
	if err != nil {
		return nil, err
	}
	if _, ok := m.GetAnnotations()[annotationReject]; ok {
		return nil, errRejected
	}
	return []string{m.GetNamespace()}, nil
}

func metaOf(obj interface{}) (metav1.Object, error) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return nil, errors.New("storetest: index function given a non-pod")
	}
	return p, nil
}

// podOpt adjusts a hand-made pod.
type podOpt func(*corev1.Pod)

func users(u string) podOpt {
	return func(p *corev1.Pod) { p.Annotations[annotationUsers] = u }
}

func rejected() podOpt {
	return func(p *corev1.Pod) { p.Annotations[annotationReject] = "true" }
}

// mkPod returns a small pod.
func mkPod(ns, name, rv string, opts ...podOpt) *corev1.Pod {
	p := &corev1.Pod{
		TypeMeta: metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"},
		ObjectMeta: metav1.ObjectMeta{
			Namespace: ns, Name: name, ResourceVersion: rv,
			UID:         types.UID("uid-" + ns + "-" + name),
			Labels:      map[string]string{},
			Annotations: map[string]string{},
		},
		Spec: corev1.PodSpec{NodeName: "node-1", Containers: []corev1.Container{{Name: "c", Image: "img:" + rv}}},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

// withRV returns a copy of p with another resourceVersion.
func withRV(p *corev1.Pod, rv string) *corev1.Pod {
	c := p.DeepCopy()
	c.ResourceVersion = rv
	return c
}

func keyOf(t testing.TB, obj interface{}) string {
	t.Helper()
	k, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		t.Fatalf("key of %T: %v", obj, err)
	}
	return k
}

// notAnObject is a value without object metadata: every key function of
// client-go rejects it.
type notAnObject struct{ Name string }

// mustAdd adds objs, failing the test on error.
func mustAdd(t testing.TB, s store.Store, objs ...*corev1.Pod) {
	t.Helper()
	for _, o := range objs {
		if err := s.Add(o); err != nil {
			t.Fatalf("Add %s: %v", keyOf(t, o), err)
		}
	}
}

// mustBeginReplace begins a Replace of s.
func mustBeginReplace(t testing.TB, s store.Store) store.Replace {
	t.Helper()
	r, err := s.BeginReplace(context.Background())
	if err != nil {
		t.Fatalf("BeginReplace: %v", err)
	}
	return r
}

// assertStored checks that s holds exactly want, at resourceVersion rv
// (assertContent and assertRV).
func assertStored(t testing.TB, s store.Store, rv string, want ...*corev1.Pod) {
	t.Helper()
	assertContent(t, s, want...)
	assertRV(t, s, rv)
}

// assertContent checks that s holds exactly want, through ListKeys, List,
// GetByKey and Get.
func assertContent(t testing.TB, s store.Store, want ...*corev1.Pod) {
	t.Helper()
	wantByKey := map[string]*corev1.Pod{}
	for _, p := range want {
		wantByKey[keyOf(t, p)] = p
	}
	assertKeys(t, "ListKeys", s.ListKeys(), keysOfPods(t, want)...)
	assertObjects(t, "List", s.List(), want...)
	for k, p := range wantByKey {
		got, exists, err := s.GetByKey(k)
		if err != nil || !exists {
			t.Errorf("GetByKey(%q) = exists %v, err %v; want the object", k, exists, err)
			continue
		}
		if !apiequality.Semantic.DeepEqual(got, p) {
			t.Errorf("GetByKey(%q) returned a different object (rv %q, want %q)", k, rvString(got), p.ResourceVersion)
		}
		if got, exists, err := s.Get(p); err != nil || !exists || !apiequality.Semantic.DeepEqual(got, p) {
			t.Errorf("Get(%s) = exists %v, err %v, equal %v", k, exists, err, apiequality.Semantic.DeepEqual(got, p))
		}
	}
}

// assertAbsent checks that none of keys is stored.
func assertAbsent(t testing.TB, s store.Store, keys ...string) {
	t.Helper()
	for _, k := range keys {
		if obj, exists, err := s.GetByKey(k); err != nil || exists {
			t.Errorf("GetByKey(%q) = %v, %v, %v; want absent", k, obj != nil, exists, err)
		}
	}
}

// assertKeys checks that got holds exactly want, in any order.
func assertKeys(t testing.TB, what string, got []string, want ...string) {
	t.Helper()
	g := slices.Sorted(slices.Values(got))
	w := slices.Sorted(slices.Values(want))
	if !slices.Equal(g, w) {
		t.Errorf("%s = %q, want %q", what, g, w)
	}
}

// assertObjects checks that got holds exactly want, in any order.
func assertObjects(t testing.TB, what string, got []interface{}, want ...*corev1.Pod) {
	t.Helper()
	wantByKey := map[string]*corev1.Pod{}
	for _, p := range want {
		wantByKey[keyOf(t, p)] = p
	}
	seen := map[string]bool{}
	for _, obj := range got {
		k := keyOf(t, obj)
		w, ok := wantByKey[k]
		switch {
		case !ok:
			t.Errorf("%s returned unexpected %s", what, k)
		case seen[k]:
			t.Errorf("%s returned %s twice", what, k)
		case !apiequality.Semantic.DeepEqual(obj, w):
			t.Errorf("%s returned a different %s (rv %q, want %q)", what, k, rvString(obj), w.ResourceVersion)
		}
		seen[k] = true
	}
	for k := range wantByKey {
		if !seen[k] {
			t.Errorf("%s is missing %s", what, k)
		}
	}
}

func keysOfPods(t testing.TB, pods []*corev1.Pod) []string {
	keys := make([]string, len(pods))
	for i, p := range pods {
		keys[i] = keyOf(t, p)
	}
	return keys
}

func rvString(obj interface{}) string {
	if p, ok := obj.(*corev1.Pod); ok {
		return p.ResourceVersion
	}
	return "<not a pod>"
}

// assertRV checks both LastStoreSyncResourceVersion and State.
func assertRV(t testing.TB, s store.Store, want string) {
	t.Helper()
	if got := s.LastStoreSyncResourceVersion(); got != want {
		t.Errorf("LastStoreSyncResourceVersion = %q, want %q", got, want)
	}
	st, err := s.State()
	if err != nil {
		t.Errorf("State: %v", err)
	} else if st.ResourceVersion != want {
		t.Errorf("State().ResourceVersion = %q, want %q", st.ResourceVersion, want)
	}
}

// isKeyError reports whether err wraps a cache.KeyError.
func isKeyError(err error) bool {
	var ke cache.KeyError
	return errors.As(err, &ke)
}
