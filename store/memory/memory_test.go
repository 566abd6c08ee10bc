package memory_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/warmcache/warmcache/internal/testkit"
	"github.com/warmcache/warmcache/store"
	"github.com/warmcache/warmcache/store/memory"
	"github.com/warmcache/warmcache/store/storetest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func newStore(t *testing.T, indexers cache.Indexers) store.Store {
	s, err := memory.New(memory.Options{Indexers: indexers})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestContract(t *testing.T) {
	storetest.Run(t, newStore)
}

func TestNewValidatesOptions(t *testing.T) {
	cases := []struct {
		name    string
		opts    memory.Options
		wantErr error
	}{
		{"zero options", memory.Options{}, nil},
		{"nil index function", memory.Options{Indexers: cache.Indexers{"bad": nil}}, memory.ErrInvalidIndexer},
		{"custom key function", memory.Options{KeyFunc: cache.MetaNamespaceKeyFunc}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, err := memory.New(tc.opts)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("New = %v, want %v", err, tc.wantErr)
			}
			if err == nil {
				if s == nil {
					t.Fatal("New returned nil store and nil error")
				}
				_ = s.Close()
			}
		})
	}
}

func TestDefaultKeyFuncHandlesTombstones(t *testing.T) {
	s := mustNew(t, memory.Options{})
	p := testkit.Pod("a", "1")
	if err := s.Add(p); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(cache.DeletedFinalStateUnknown{Key: "ns/a", Obj: p}); err != nil {
		t.Fatalf("Delete(tombstone) with the default key function: %v", err)
	}
	if _, exists, _ := s.GetByKey("ns/a"); exists {
		t.Error("tombstone delete left the object")
	}

	// With MetaNamespaceKeyFunc a tombstone is a key error, as in client-go.
	strict := mustNew(t, memory.Options{KeyFunc: cache.MetaNamespaceKeyFunc})
	var ke cache.KeyError
	if err := strict.Delete(cache.DeletedFinalStateUnknown{Key: "ns/a"}); !errors.As(err, &ke) {
		t.Errorf("Delete(tombstone) with MetaNamespaceKeyFunc = %v, want a KeyError", err)
	}
}

func TestCustomKeyFunc(t *testing.T) {
	byName := func(obj interface{}) (string, error) {
		p, ok := obj.(*corev1.Pod)
		if !ok {
			return "", errors.New("not a pod")
		}
		return "pod:" + p.Name, nil
	}
	s := mustNew(t, memory.Options{KeyFunc: byName})
	if err := s.Add(testkit.Pod("a", "1")); err != nil {
		t.Fatal(err)
	}
	if _, exists, err := s.GetByKey("pod:a"); err != nil || !exists {
		t.Errorf("GetByKey(pod:a) = %v, %v", exists, err)
	}
	if err := s.Add("x"); !errors.As(err, new(cache.KeyError)) {
		t.Errorf("Add(non-pod) = %v, want KeyError", err)
	}
}

func TestAddIndexersValidation(t *testing.T) {
	s := mustNew(t, memory.Options{})
	if err := s.AddIndexers(cache.Indexers{"nil": nil}); !errors.Is(err, memory.ErrInvalidIndexer) {
		t.Errorf("AddIndexers(nil func) = %v, want ErrInvalidIndexer", err)
	}
	r, err := s.BeginReplace(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := s.AddIndexers(cache.Indexers{"ns": cache.MetaNamespaceIndexFunc}); !errors.Is(err, store.ErrReplaceInProgress) {
		t.Errorf("AddIndexers during a Replace = %v, want ErrReplaceInProgress", err)
	}
	if err := r.Abort(); err != nil {
		t.Fatal(err)
	}
	if err := s.AddIndexers(cache.Indexers{"ns": cache.MetaNamespaceIndexFunc}); err != nil {
		t.Errorf("AddIndexers after Abort: %v", err)
	}
}

func TestUnknownTransactionType(t *testing.T) {
	s := mustNew(t, memory.Options{})
	a := testkit.Pod("a", "1")
	bad := cache.Transaction{Type: "Upsert", Object: testkit.Pod("b", "2")}
	if err := s.Apply(context.Background(), []cache.Transaction{{Type: cache.TransactionTypeAdd, Object: a}, bad}, "5"); !errors.Is(err, memory.ErrTransactionType) {
		t.Errorf("Apply with an unknown type = %v, want ErrTransactionType", err)
	}
	if keys := s.ListKeys(); len(keys) != 0 {
		t.Errorf("failed Apply stored %q", keys)
	}
	terr := s.Transaction(cache.Transaction{Type: cache.TransactionTypeAdd, Object: a}, bad)
	if terr == nil || !slices.Equal(terr.SuccessfulIndices, []int{0}) || len(terr.Errors) != 1 || !errors.Is(terr.Errors[0], memory.ErrTransactionType) {
		t.Errorf("Transaction with an unknown type = %v", terr)
	}
}

func TestObjectsAreNotCopied(t *testing.T) {
	s := mustNew(t, memory.Options{})
	p := testkit.Pod("a", "1")
	if err := s.Add(p); err != nil {
		t.Fatal(err)
	}
	got, _, _ := s.GetByKey("ns/a")
	if got != p {
		t.Error("memory store returned a copy; it is documented to return the stored object")
	}
}

func TestCloseIsIdempotent(t *testing.T) {
	s := mustNew(t, memory.Options{})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close = %v, want nil", err)
	}
	if err := s.Resync(); !errors.Is(err, store.ErrClosed) {
		t.Errorf("Resync after Close = %v, want ErrClosed", err)
	}
	if ix := s.GetIndexers(); ix != nil {
		t.Errorf("GetIndexers after Close = %v, want nil", ix)
	}
}

// TestScanCallbackMayRead documents that Scan's callback runs without the
// lock held: reading the store from it does not deadlock, even with a
// writer waiting.
func TestScanCallbackMayRead(t *testing.T) {
	s := mustNew(t, memory.Options{})
	for i := range 3 {
		if err := s.Add(testkit.Pod(fmt.Sprint(i), fmt.Sprint(i+1))); err != nil {
			t.Fatal(err)
		}
	}
	writerDone := make(chan error)
	err := s.Scan(context.Background(), func(key string, _ interface{}) error {
		if key == "ns/0" {
			go func() { writerDone <- s.Add(testkit.Pod("late", "9")) }()
			// The writer may now wait for the lock; a reader must still pass.
			if err := <-writerDone; err != nil {
				return err
			}
		}
		_, _, err := s.GetByKey(key)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

func mustNew(t *testing.T, opts memory.Options) *memory.Store {
	t.Helper()
	s, err := memory.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// TestMatchesClientGo applies the same random operations to a memory store
// and to client-go's cache.NewIndexer and compares every observable result
// after each one.
func TestMatchesClientGo(t *testing.T) {
	labelIndex := func(obj interface{}) ([]string, error) {
		p := obj.(*corev1.Pod)
		if p.Labels["l"] == "" {
			return nil, nil
		}
		return strings.Split(p.Labels["l"], ","), nil
	}
	indexers := cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc, "l": labelIndex}
	for seed := range uint64(20) {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
			ours := mustNew(t, memory.Options{Indexers: indexers})
			theirs := cache.NewIndexer(cache.DeletionHandlingMetaNamespaceKeyFunc, indexers)
			rng := rand.New(rand.NewPCG(seed, 99))
			rv := 0
			randomPod := func() *corev1.Pod {
				rv++
				vals := []string{"", "a", "b", "a,b", "c,a", "b,b"}
				r := fmt.Sprint(rv)
				if rng.IntN(10) == 0 {
					r = "" // objects without an RV reset the store's
				}
				return testkit.Pod(fmt.Sprint("p", rng.IntN(8)), r, testkit.Namespace(fmt.Sprint("ns", rng.IntN(3))), testkit.Labels{"l": vals[rng.IntN(len(vals))]})
			}
			for step := range 300 {
				var desc string
				var errOurs, errTheirs error
				switch op := rng.IntN(9); op {
				case 0, 1:
					p := randomPod()
					desc = "Add " + p.Namespace + "/" + p.Name
					errOurs, errTheirs = ours.Add(p), theirs.Add(p)
				case 2:
					p := randomPod()
					desc = "Update " + p.Namespace + "/" + p.Name
					errOurs, errTheirs = ours.Update(p), theirs.Update(p)
				case 3:
					p := randomPod()
					desc = "Delete " + p.Namespace + "/" + p.Name
					errOurs, errTheirs = ours.Delete(p), theirs.Delete(p)
				case 4:
					p := randomPod()
					tomb := cache.DeletedFinalStateUnknown{Key: p.Namespace + "/" + p.Name, Obj: p}
					desc = "Delete tombstone " + tomb.Key
					errOurs, errTheirs = ours.Delete(tomb), theirs.Delete(tomb)
				case 5:
					var list []interface{}
					for range rng.IntN(6) {
						list = append(list, randomPod())
					}
					rv++
					desc = fmt.Sprintf("Replace %d at %d", len(list), rv)
					errOurs, errTheirs = ours.Replace(list, fmt.Sprint(rv)), theirs.Replace(list, fmt.Sprint(rv))
				case 6:
					rv++
					desc = "Bookmark"
					ours.Bookmark(fmt.Sprint(rv))
					theirs.Bookmark(fmt.Sprint(rv))
				case 7:
					desc = "Add key error"
					errOurs, errTheirs = ours.Add(notMeta{}), theirs.Add(notMeta{})
				case 8:
					types := []cache.TransactionType{cache.TransactionTypeAdd, cache.TransactionTypeUpdate, cache.TransactionTypeDelete}
					var txns []cache.Transaction
					for range rng.IntN(5) {
						txn := cache.Transaction{Type: types[rng.IntN(3)], Object: randomPod()}
						switch rng.IntN(6) {
						case 0:
							txn.Object = notMeta{}
						case 1:
							txn.Type = cache.TransactionTypeDelete
							txn.Object = cache.DeletedFinalStateUnknown{Key: fmt.Sprint("ns", rng.IntN(3), "/p", rng.IntN(8))}
						}
						txns = append(txns, txn)
					}
					desc = fmt.Sprintf("Transaction of %d", len(txns))
					to, tt := ours.Transaction(txns...), theirs.(cache.TransactionStore).Transaction(txns...)
					if (to == nil) != (tt == nil) || (to != nil && !slices.Equal(to.SuccessfulIndices, tt.SuccessfulIndices)) {
						t.Fatalf("step %d %s: Transaction = %v, client-go %v", step, desc, to, tt)
					}
				}
				if (errOurs == nil) != (errTheirs == nil) {
					t.Fatalf("step %d %s: error %v, client-go %v", step, desc, errOurs, errTheirs)
				}
				compareWithClientGo(t, fmt.Sprintf("step %d %s", step, desc), ours, theirs)
			}
		})
	}
}

type notMeta struct{}

func compareWithClientGo(t *testing.T, when string, ours *memory.Store, theirs cache.Indexer) {
	t.Helper()
	if o, c := ours.LastStoreSyncResourceVersion(), theirs.LastStoreSyncResourceVersion(); o != c {
		t.Fatalf("%s: LastStoreSyncResourceVersion %q, client-go %q", when, o, c)
	}
	keys := slices.Sorted(slices.Values(ours.ListKeys()))
	if c := slices.Sorted(slices.Values(theirs.ListKeys())); !slices.Equal(keys, c) {
		t.Fatalf("%s: ListKeys %q, client-go %q", when, keys, c)
	}
	for _, k := range keys {
		o, _, _ := ours.GetByKey(k)
		c, _, _ := theirs.GetByKey(k)
		if o != c {
			t.Fatalf("%s: GetByKey(%q) differs from client-go", when, k)
		}
	}
	for name := range theirs.GetIndexers() {
		values := slices.Sorted(slices.Values(ours.ListIndexFuncValues(name)))
		if c := slices.Sorted(slices.Values(theirs.ListIndexFuncValues(name))); !slices.Equal(values, c) {
			t.Fatalf("%s: ListIndexFuncValues(%q) %q, client-go %q", when, name, values, c)
		}
		for _, v := range values {
			o, _ := ours.IndexKeys(name, v)
			c, _ := theirs.IndexKeys(name, v)
			if !slices.Equal(o, c) {
				t.Fatalf("%s: IndexKeys(%q, %q) %q, client-go %q", when, name, v, o, c)
			}
		}
	}
}

// TestKeyFunctionPanicIsKeyError passes objects that make the key function
// panic (a typed nil pointer, which client-go's key functions dereference)
// to every method that computes a key: each returns a cache.KeyError and
// changes nothing, where client-go's store crashes.
func TestKeyFunctionPanicIsKeyError(t *testing.T) {
	ctx := context.Background()
	var nilPod *corev1.Pod
	isKeyError := func(err error) bool { return errors.As(err, new(cache.KeyError)) }
	cases := []struct {
		name string
		call func(s *memory.Store) error
	}{
		{"Add", func(s *memory.Store) error { return s.Add(nilPod) }},
		{"Update", func(s *memory.Store) error { return s.Update(nilPod) }},
		{"Delete", func(s *memory.Store) error { return s.Delete(nilPod) }},
		{"Get", func(s *memory.Store) error { _, _, err := s.Get(nilPod); return err }},
		{"Replace", func(s *memory.Store) error { return s.Replace([]interface{}{testkit.Pod("b", "2"), nilPod}, "3") }},
		{"Apply", func(s *memory.Store) error {
			return s.Apply(ctx, []cache.Transaction{{Type: cache.TransactionTypeAdd, Object: nilPod}}, "3")
		}},
		{"Transaction", func(s *memory.Store) error {
			terr := s.Transaction(cache.Transaction{Type: cache.TransactionTypeUpdate, Object: nilPod})
			if terr == nil || len(terr.Errors) != 1 {
				return fmt.Errorf("Transaction = %v, want one error", terr)
			}
			return terr.Errors[0]
		}},
		{"panicking key function", func(*memory.Store) error {
			s := mustNew(t, memory.Options{KeyFunc: func(interface{}) (string, error) { panic("bug") }})
			return s.Add(testkit.Pod("a", "1"))
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := mustNew(t, memory.Options{})
			a := testkit.Pod("a", "1")
			if err := s.Add(a); err != nil {
				t.Fatal(err)
			}
			if err := tc.call(s); !isKeyError(err) {
				t.Fatalf("got %v, want a cache.KeyError", err)
			}
			if keys := s.ListKeys(); !slices.Equal(keys, []string{"ns/a"}) || s.LastStoreSyncResourceVersion() != "1" {
				t.Fatalf("the failed call changed the store: keys %q, rv %q", keys, s.LastStoreSyncResourceVersion())
			}
		})
	}
}

// TestClientGo runs client-go's own tools/cache store, indexer and lister
// tests (storetest.RunClientGo), with client-go's plain structs as well as
// pods: the store holds values of any type.
func TestClientGo(t *testing.T) {
	storetest.RunClientGo(t, storetest.ClientGoConfig{
		New: func(t *testing.T, keyFunc cache.KeyFunc, indexers cache.Indexers) store.Store {
			s, err := memory.New(memory.Options{KeyFunc: keyFunc, Indexers: indexers})
			if err != nil {
				t.Fatal(err)
			}
			return s
		},
		Arbitrary: true,
	})
}
