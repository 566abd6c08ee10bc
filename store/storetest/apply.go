package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/warmcache/warmcache/store"
)

func testApplyInOrderWithRV(t *testing.T, h harness) {
	a, b := mkPod("ns", "a", "1"), mkPod("ns", "b", "2", users("ernie"))
	s := h.open(t, nil, a, b)
	a3, c4 := withRV(a, "3"), mkPod("ns", "c", "4", users("bert"))
	txns := []cache.Transaction{
		update(a3), add(c4), del(withRV(b, "5")),
		del(mkPod("ns", "absent", "6")), // deleting an absent key is fine
		add(mkPod("ns", "d", "7")), del(mkPod("ns", "d", "8")),
	}
	if err := s.Apply(context.Background(), txns, "100"); err != nil {
		t.Fatalf("Apply: %v", err)
	}
	assertContent(t, s, a3, c4)
	// A given rv wins over the objects' own.
	assertRV(t, s, "100")
	assertKeys(t, "ListIndexFuncValues(byUser)", s.ListIndexFuncValues(indexUsers), "bert")
}

func testApplyEmptyRV(t *testing.T, h harness) {
	s := h.open(t, nil)
	a := mkPod("ns", "a", "1")
	if err := s.Apply(context.Background(), []cache.Transaction{add(a), add(mkPod("ns", "b", "9")), del(mkPod("ns", "b", "12"))}, ""); err != nil {
		t.Fatal(err)
	}
	assertStored(t, s, "12", a)

	// A tombstone last: no RV is recorded (client-go's Transaction rule).
	if err := s.Apply(context.Background(), []cache.Transaction{add(mkPod("ns", "c", "20")), del(cache.DeletedFinalStateUnknown{Key: "ns/a", Obj: a})}, ""); err != nil {
		t.Fatal(err)
	}
	assertStored(t, s, "12", mkPod("ns", "c", "20"))
}

func testApplyBookmarkAndNoop(t *testing.T, h harness) {
	a := mkPod("ns", "a", "1")
	s := h.open(t, nil, a)
	if err := s.Apply(context.Background(), nil, "40"); err != nil {
		t.Fatalf("Apply(nil, 40): %v", err)
	}
	assertStored(t, s, "40", a)
	if err := s.Apply(context.Background(), nil, ""); err != nil {
		t.Fatalf("Apply(nil, \"\"): %v", err)
	}
	assertRV(t, s, "40")
}

func testApplyFailureAppliesNothing(t *testing.T, h harness) {
	a := mkPod("ns", "a", "1", users("ernie"))
	cases := []struct {
		name  string
		txns  []cache.Transaction
		check func(error) bool
	}{
		{"key error last", []cache.Transaction{update(withRV(a, "2")), add(mkPod("ns", "b", "3")), add(notAnObject{})}, isKeyError},
		{"key error first", []cache.Transaction{del(nil), del(a)}, isKeyError},
		{"index function error", []cache.Transaction{del(a), add(mkPod("ns", "d", "2")), add(mkPod("ns", "b", "3", rejected())), add(mkPod("ns", "c", "4"))},
			func(err error) bool { return errors.Is(err, errRejected) }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := h.open(t, pickyIndexers(), a)
			err := s.Apply(context.Background(), tc.txns, "50")
			if !tc.check(err) {
				t.Errorf("Apply = %v, want the failing transaction's error", err)
			}
			assertStored(t, s, "1", a)
		})
	}
}

func testApplyCancelledContext(t *testing.T, h harness) {
	a := mkPod("ns", "a", "1")
	s := h.open(t, nil, a)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.Apply(ctx, []cache.Transaction{add(mkPod("ns", "b", "2"))}, "2"); !errors.Is(err, context.Canceled) {
		t.Errorf("Apply with a cancelled context = %v, want context.Canceled", err)
	}
	assertStored(t, s, "1", a)
}

// testApplyAtomicForReaders: every Apply swaps one generation of pods for
// the next; a concurrent reader must never see a mix or a count between.
func testApplyAtomicForReaders(t *testing.T, h harness) {
	s := h.open(t, nil)
	const perGen, gens = 8, 25
	generation := func(g int) []*corev1.Pod {
		out := make([]*corev1.Pod, perGen)
		for i := range out {
			out[i] = mkPod("atomic", fmt.Sprintf("g%03d-%d", g, i), fmt.Sprint(g*perGen+i+1), users(fmt.Sprintf("gen%d", g)))
		}
		return out
	}
	prev := generation(0)
	mustAdd(t, s, prev...)

	stop, started := make(chan struct{}), make(chan struct{})
	var wg sync.WaitGroup
	var readerErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		for n := 0; ; n++ {
			if n == 1 {
				close(started)
			}
			select {
			case <-stop:
				return
			default:
			}
			if err := checkOneGeneration(s, perGen); err != nil {
				readerErr = err
				if n == 0 {
					close(started)
				}
				return
			}
		}
	}()
	<-started
	for g := 1; g < gens; g++ {
		next := generation(g)
		txns := make([]cache.Transaction, 0, 2*perGen)
		for i := range prev {
			txns = append(txns, del(prev[i]), add(next[i]))
		}
		if err := s.Apply(context.Background(), txns, fmt.Sprint(1000+g)); err != nil {
			t.Errorf("Apply generation %d: %v", g, err)
			break
		}
		prev = next
	}
	close(stop)
	wg.Wait()
	if readerErr != nil {
		t.Error(readerErr)
	}
	assertContent(t, s, prev...)
}

// checkOneGeneration checks that List and ByIndex each see exactly one
// generation of perGen pods.
func checkOneGeneration(s store.Store, perGen int) error {
	gens := map[string]int{}
	for _, obj := range s.List() {
		gens[obj.(*corev1.Pod).Annotations[annotationUsers]]++
	}
	if len(gens) != 1 {
		return fmt.Errorf("List saw a mix of generations: %v", gens)
	}
	for g, n := range gens {
		if n != perGen {
			return fmt.Errorf("List saw %d pods of %s, want %d", n, g, perGen)
		}
	}
	objs, err := s.ByIndex(indexNamespace, "atomic")
	if err != nil {
		return err
	}
	if len(objs) != perGen {
		return fmt.Errorf("ByIndex saw %d pods, want %d", len(objs), perGen)
	}
	return nil
}

func testStateFresh(t *testing.T, h harness) {
	s := h.open(t, nil)
	st, err := s.State()
	if err != nil {
		t.Fatal(err)
	}
	if st != (store.State{}) {
		t.Errorf("State of a new store = %+v, want the zero State", st)
	}
}

// testStateCompleteAfterReplace: incremental writes alone never make a
// store complete; a committed Replace does, and later writes keep it so.
func testStateCompleteAfterReplace(t *testing.T, h harness) {
	s := h.open(t, nil)
	ctx := context.Background()
	steps := []struct {
		name     string
		do       func() error
		complete bool
		objects  int
		rv       string
	}{
		{"Add", func() error { return s.Add(mkPod("ns", "a", "1")) }, false, 1, "1"},
		{"Apply with rv", func() error { return s.Apply(ctx, []cache.Transaction{add(mkPod("ns", "b", "2"))}, "3") }, false, 2, "3"},
		{"Bookmark", func() error { s.Bookmark("4"); return nil }, false, 2, "4"},
		{"Replace", func() error { return s.Replace([]interface{}{mkPod("ns", "c", "5")}, "6") }, true, 1, "6"},
		{"Add after Replace", func() error { return s.Add(mkPod("ns", "d", "7")) }, true, 2, "7"},
		{"Delete after Replace", func() error { return s.Delete(mkPod("ns", "c", "8")) }, true, 1, "8"},
		{"Apply after Replace", func() error { return s.Apply(ctx, []cache.Transaction{add(mkPod("ns", "e", "9"))}, "10") }, true, 2, "10"},
		{"Bookmark after Replace", func() error { s.Bookmark("11"); return nil }, true, 2, "11"},
	}
	for _, step := range steps {
		if err := step.do(); err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		st, err := s.State()
		if err != nil {
			t.Fatalf("after %s: State: %v", step.name, err)
		}
		want := store.State{ResourceVersion: step.rv, Complete: step.complete, Objects: step.objects}
		if st != want {
			t.Errorf("after %s: State = %+v, want %+v", step.name, st, want)
		}
	}
}
