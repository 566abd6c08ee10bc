package bolt

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"testing"

	bbolt "go.etcd.io/bbolt"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/warmcache/warmcache/store"
)

// keyRVs returns "key@rv" of each pod of objs, in order.
func keyRVs(t testing.TB, objs []interface{}) []string {
	t.Helper()
	out := make([]string, len(objs))
	for i, o := range objs {
		p := o.(*corev1.Pod)
		out[i] = p.Namespace + "/" + p.Name + "@" + p.ResourceVersion
	}
	return out
}

// fileKeyRVs returns keyRVs of every object in the file, read past the
// hot tier.
func fileKeyRVs(t testing.TB, s *Store) []string {
	t.Helper()
	var out []string
	for _, key := range s.ListKeys() {
		obj, ok, err := s.GetByKeyUncached(key)
		if err != nil || !ok {
			t.Fatalf("GetByKeyUncached(%s) = %t, %v", key, ok, err)
		}
		out = append(out, keyRVs(t, []interface{}{obj})...)
	}
	return out
}

// selectAll returns the objects Select (or ScanParallel when parallel)
// calls its function with for sel.
func selectAll(t testing.TB, s *Store, sel store.Selection, parallel bool) []interface{} {
	t.Helper()
	var out []interface{}
	fn := func(_ string, obj interface{}) error { out = append(out, obj); return nil }
	if parallel {
		must(t, s.ScanParallel(context.Background(), 2, fn))
	} else {
		must(t, s.Select(context.Background(), sel, fn))
	}
	return out
}

// TestHotTierWhole checks that a hot tier large enough to hold a store
// comes to hold all of it after one bulk read, answers the bulk reads of
// every object and of a namespace without decoding or reading the file,
// and agrees with the file after the store's writes, a bookmark and a
// relist.
func TestHotTierWhole(t *testing.T) {
	db := openDB(t, tempPath(t), Options{Sync: UnsafeNoSync})
	c := &countingCodec{Codec: podCodec}
	s, err := db.Resource(context.Background(), ResourceOptions{Identity: podsID, Codec: c, Indexers: namespaceIndexers()})
	must(t, err)
	var list []interface{}
	for i := range 300 {
		list = append(list, mkPod(fmt.Sprintf("ns-%d", i%3), fmt.Sprintf("p%03d", i), "1"))
	}
	must(t, s.Replace(list, "1")) // a relist puts nothing in the tier
	if s.hot.IsWhole() {
		t.Fatal("whole after a relist")
	}
	check := func(when string, decodes int64) {
		t.Helper()
		want := fileKeyRVs(t, s)
		c.decoded.Store(0)
		if got := keyRVs(t, s.List()); !slices.Equal(got, want) {
			t.Errorf("%s: List = %v, the file holds %v", when, got, want)
		}
		if n := c.decoded.Load(); n != decodes {
			t.Errorf("%s: List decoded %d objects, want %d", when, n, decodes)
		}
		if !s.hot.IsWhole() {
			t.Fatalf("%s: not whole after a List", when)
		}
		c.decoded.Store(0)
		if got := keyRVs(t, selectAll(t, s, store.Selection{}, false)); !slices.Equal(got, want) {
			t.Errorf("%s: Select(everything) = %v, want %v", when, got, want)
		}
		if got := keyRVs(t, selectAll(t, s, store.Selection{}, true)); !slices.Equal(got, want) {
			t.Errorf("%s: ScanParallel = %v, want %v", when, got, want)
		}
		var inNS []string
		for _, kr := range want {
			if kr[:5] == "ns-1/" {
				inNS = append(inNS, kr)
			}
		}
		if got := keyRVs(t, selectAll(t, s, store.Selection{Namespace: "ns-1"}, false)); !slices.Equal(got, inNS) {
			t.Errorf("%s: Select(ns-1) = %v, want %v", when, got, inNS)
		}
		if n := c.decoded.Load(); n != 0 {
			t.Errorf("%s: the reads of a whole tier decoded %d objects", when, n)
		}
	}
	check("first list", 300)
	check("second list", 0)

	ctx := context.Background()
	must(t, s.Apply(ctx, txns(mkPod("ns-1", "p001", "2"), mkPod("ns-1", "new", "2")), "2"))
	must(t, s.Delete(mkPod("ns-2", "p002", "3")))
	s.Bookmark("4")
	check("after writes", 0)

	must(t, s.Replace([]interface{}{mkPod("ns-1", "p001", "5"), mkPod("ns-2", "q", "5")}, "5"))
	if s.hot.IsWhole() {
		t.Error("still whole after a relist")
	}
	check("after a relist", 2)
}

// TestHotTierWholeLostToEviction checks that a part whose entries another
// store's writes evict is no longer whole, and its lists read the file.
func TestHotTierWholeLostToEviction(t *testing.T) {
	db := openDB(t, tempPath(t), Options{Sync: UnsafeNoSync, HotBytes: hotBudget(t, 12)})
	s := openPods(t, db, nil)
	var list []interface{}
	for i := range 10 {
		list = append(list, mkPod("ns", fmt.Sprintf("p%d", i), "1"))
	}
	must(t, s.Replace(list, "1"))
	s.List()
	if !s.hot.IsWhole() {
		t.Fatal("not whole after a List of a store that fits")
	}
	otherID := podsID
	otherID.Namespace = "other"
	o, err := db.Resource(context.Background(), ResourceOptions{Identity: otherID, Codec: podCodec})
	must(t, err)
	for i := range 4 {
		must(t, o.Add(mkPod("other", fmt.Sprintf("p%d", i), "1")))
		if _, _, err := o.GetByKey(fmt.Sprintf("other/p%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	if s.hot.IsWhole() {
		t.Fatal("still whole after another store's reads evicted its entries")
	}
	if got, want := keyRVs(t, s.List()), fileKeyRVs(t, s); !slices.Equal(got, want) {
		t.Errorf("List = %v, the file holds %v", got, want)
	}
}

// TestHotTierWholeConcurrent races Lists and Selects of a whole tier
// against batches and relists: every List is one of the states the
// batches leave (each batch writes every pod with its resourceVersion, so
// a List mixing two is wrong), and at the end the lists agree with the
// file.
func TestHotTierWholeConcurrent(t *testing.T) {
	db := openDB(t, tempPath(t), Options{Sync: UnsafeNoSync})
	s := openPods(t, db, nil)
	const pods, writes = 8, 200
	batch := func(w int) []interface{} {
		var out []interface{}
		for i := range pods {
			// Each state holds pods w..w+pods-1: a batch deletes one
			// and adds one.
			out = append(out, mkPod("ns", fmt.Sprintf("p%04d", w+i), strconv.Itoa(w)))
		}
		return out
	}
	must(t, s.Replace(batch(1), "1"))
	ctx := context.Background()
	done := make(chan struct{})
	errs := make(chan error, 2)
	checkState := func(objs []interface{}) error {
		if len(objs) != pods {
			return fmt.Errorf("%d objects, want %d", len(objs), pods)
		}
		first := objs[0].(*corev1.Pod)
		w, _ := strconv.Atoi(first.ResourceVersion)
		for i, o := range objs {
			p := o.(*corev1.Pod)
			if want := fmt.Sprintf("p%04d", w+i); p.Name != want || p.ResourceVersion != first.ResourceVersion {
				return fmt.Errorf("object %d is %s@%s in a state of %s@%s", i, p.Name, p.ResourceVersion, want, first.ResourceVersion)
			}
		}
		return nil
	}
	for _, read := range []func() []interface{}{
		s.List,
		func() []interface{} { return selectAll(t, s, store.Selection{Namespace: "ns"}, false) },
	} {
		go func() {
			for {
				select {
				case <-done:
					errs <- nil
					return
				default:
				}
				if err := checkState(read()); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	for w := 2; w <= writes; w++ {
		if w%50 == 0 {
			must(t, s.Replace(batch(w), strconv.Itoa(w)))
			continue
		}
		txs := txns()
		txs = append(txs, deleteTxn(mkPod("ns", fmt.Sprintf("p%04d", w-1), "")))
		for _, o := range batch(w) {
			txs = append(txs, txns(o.(*corev1.Pod))...)
		}
		must(t, s.Apply(ctx, txs, strconv.Itoa(w)))
	}
	close(done)
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if got, want := keyRVs(t, s.List()), fileKeyRVs(t, s); !slices.Equal(got, want) {
		t.Errorf("List = %v, the file holds %v", got, want)
	}
	if !s.hot.IsWhole() {
		t.Error("not whole after a quiet List")
	}
}

func deleteTxn(obj *corev1.Pod) cache.Transaction {
	return cache.Transaction{Type: cache.TransactionTypeDelete, Object: obj}
}

// TestHotTierWholeAfterWarmStart checks that a store opened again on its
// file comes to hold every object in its tier through the warm start's
// replay (ScanParallel), and then answers with what the file holds.
func TestHotTierWholeAfterWarmStart(t *testing.T) {
	path := tempPath(t)
	writeThreePods(t, path)
	db := openDB(t, path, Options{Sync: UnsafeNoSync})
	s := openPods(t, db, namespaceIndexers())
	if s.hot.IsWhole() {
		t.Fatal("whole before any read")
	}
	replayed := selectAll(t, s, store.Selection{}, true)
	if !s.hot.IsWhole() {
		t.Fatal("not whole after the replay")
	}
	want := fileKeyRVs(t, s)
	if got := keyRVs(t, replayed); !slices.Equal(got, want) {
		t.Errorf("replay = %v, the file holds %v", got, want)
	}
	if got := keyRVs(t, s.List()); !slices.Equal(got, want) {
		t.Errorf("List = %v, the file holds %v", got, want)
	}
}

// TestHotTierWholeNotFromDamage checks that a bulk read that meets a
// damaged object leaves the tier not whole (the object is skipped and the
// resource marked incomplete), so that later lists read the file and skip
// it too, instead of answering without it as if it did not exist.
func TestHotTierWholeNotFromDamage(t *testing.T) {
	path := damagedPath(t)
	writeThreePods(t, path)
	rawUpdate(t, path, func(tx *bbolt.Tx) error {
		_, g := rawLive(t, tx)
		id := itemEntry(t, g, "ns/b").ID
		env := slices.Clone(rawEnvelope(t, g, "ns/b"))
		env[len(env)/2] ^= 0x01
		return g.Blobs.Put(slices.Clone(id), env)
	})
	db := openDB(t, path, Options{Sync: UnsafeNoSync})
	var reported int
	s, err := db.Resource(context.Background(), ResourceOptions{Identity: podsID, Codec: podCodec, Indexers: namespaceIndexers(),
		OnCorruption: func(error) { reported++ }})
	must(t, err)
	for range 2 {
		if got := keyRVs(t, s.List()); !slices.Equal(got, []string{"ns/a@1", "ns/c@3"}) {
			t.Errorf("List = %v, want the damaged object skipped", got)
		}
		if s.hot.IsWhole() {
			t.Fatal("whole after a List that met a damaged object")
		}
	}
	if reported != 2 {
		t.Errorf("OnCorruption called %d times, want once per List", reported)
	}
}
