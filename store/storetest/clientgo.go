package storetest

// This file and the clientgo_*.go files beside it port client-go's own
// tests of tools/cache at v0.36.3 (store_test.go, index_test.go,
// thread_safe_store_test.go, listers_test.go) to warmcache's stores. Cases
// the contract suite (Run) already covers are not repeated; the test that
// covers each is named where the client-go test is ported.

import (
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/warmcache/warmcache/store"
)

// ClientGoConfig configures RunClientGo.
type ClientGoConfig struct {
	// New returns a new, empty store with the given key function and
	// exactly the given indexers; it may call t.Fatal and register
	// cleanups. RunClientGo closes every store it opened.
	New func(t *testing.T, keyFunc cache.KeyFunc, indexers cache.Indexers) store.Store
	// Arbitrary reports that the store holds values of any type, as
	// client-go's does (store/memory): the tests written with client-go's
	// plain structs then run with them as well as with pods. A store that
	// encodes objects (store/bolt) holds runtime.Objects only and runs
	// them with pods carrying the same id and value.
	Arbitrary bool
}

// RunClientGo runs client-go's tools/cache store, indexer and lister tests
// as subtests of t, grouped as client-go's files are (Store, Index,
// ThreadSafeStore, Listers). Tests written with client-go's plain
// testStoreObject run once per object kind ("Pod", and "Plain" when
// cfg.Arbitrary).
func RunClientGo(t *testing.T, cfg ClientGoConfig) {
	kinds := []objKind{podKind}
	if cfg.Arbitrary {
		kinds = append(kinds, plainKind)
	}
	for _, g := range clientGoSuite {
		t.Run(g.name, func(t *testing.T) {
			for _, tc := range g.tests {
				if tc.perKind == nil {
					if tc.plainOnly && !cfg.Arbitrary {
						continue
					}
					t.Run(tc.name, func(t *testing.T) { tc.fn(t, cgHarness{cfg: cfg, kind: podKind}) })
					continue
				}
				for _, k := range kinds {
					t.Run(tc.name+"/"+k.name, func(t *testing.T) { tc.perKind(t, cgHarness{cfg: cfg, kind: k}) })
				}
			}
		})
	}
}

// clientGoTest is one ported test: fn runs once (plainOnly: on stores that
// hold arbitrary values only), perKind once per object kind.
type clientGoTest struct {
	name      string
	fn        func(t *testing.T, h cgHarness)
	perKind   func(t *testing.T, h cgHarness)
	plainOnly bool
}

type cgHarness struct {
	cfg  ClientGoConfig
	kind objKind
}

// open returns a new store that is checked (CheckConsistent, whose keys
// agree with the kinds' key function for pods: they are cluster-scoped
// and keyed by name) and closed when the test ends.
func (h cgHarness) open(t *testing.T, keyFunc cache.KeyFunc, indexers cache.Indexers) store.Store {
	t.Helper()
	if indexers == nil {
		indexers = cache.Indexers{}
	}
	return checkedAtEnd(t, h.cfg.New(t, keyFunc, indexers))
}

// openKind returns a store keyed by the kind's id with client-go's
// testStoreIndexers (by_val).
func (h cgHarness) openKind(t *testing.T) store.Store {
	t.Helper()
	return h.open(t, h.kind.keyFunc, cache.Indexers{"by_val": h.kind.indexFunc})
}

// objKind is how a test makes client-go's testStoreObject{id, val}.
type objKind struct {
	name string
	mk   func(id, val string) interface{}
	// id and val panic on an object of another kind, as client-go's
	// testStoreKeyFunc and testStoreIndexFunc do.
	id, val func(obj interface{}) string
}

func (k objKind) keyFunc(obj interface{}) (string, error) { return k.id(obj), nil }

func (k objKind) indexFunc(obj interface{}) ([]string, error) { return []string{k.val(obj)}, nil }

// testStoreObject is client-go's plain test object: no metadata, not a
// runtime.Object. Its fields are exported (client-go's are not) so that
// CheckConsistent can compare objects with apiequality.Semantic.DeepEqual.
type testStoreObject struct {
	ID  string
	Val string
}

var plainKind = objKind{
	name: "Plain",
	mk:   func(id, val string) interface{} { return testStoreObject{ID: id, Val: val} },
	id:   func(obj interface{}) string { return obj.(testStoreObject).ID },
	val:  func(obj interface{}) string { return obj.(testStoreObject).Val },
}

// annotationVal carries testStoreObject's val on a pod.
const annotationVal = "storetest.warmcache.io/val"

// podKind stores testStoreObject{id, val} as a cluster-scoped pod named id
// with val in an annotation.
var podKind = objKind{
	name: "Pod",
	mk: func(id, val string) interface{} {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: id, Annotations: map[string]string{annotationVal: val}},
		}
	},
	id:  func(obj interface{}) string { return obj.(*corev1.Pod).Name },
	val: func(obj interface{}) string { return obj.(*corev1.Pod).Annotations[annotationVal] },
}

// errTest is the error of the tests' own key and index functions.
var errTest = errors.New("storetest: rejected by the test's function")
