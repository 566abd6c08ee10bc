package bolt

import (
	"context"
	"fmt"
	"reflect"
	"runtime"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/client-go/tools/cache"

	"github.com/warmcache/warmcache/store"
	"github.com/warmcache/warmcache/store/bolt/internal/hot"
)

// hotBudget returns a hot tier budget that holds n of the pods mkPod
// makes with a two-character name, and not n+1.
func hotBudget(t testing.TB, n int) *int64 {
	t.Helper()
	env, err := (&Store{codec: podCodec}).encode("ns/p0", mkPod("ns", "p0", "1"))
	must(t, err)
	one := hot.Cost(podCodec.Name(), "ns/p0", len(env))
	return ptrTo(int64(n)*one + one/2)
}

// TestHotTierMetrics checks the hits, misses, evictions, bytes and entries
// the DB's Metrics are told, within the byte budget.
func TestHotTierMetrics(t *testing.T) {
	m := newTestMetrics()
	hotSeries := func(name string) int64 { return m.hotCount(podsID.String(), name) }
	db := openDB(t, tempPath(t), Options{Sync: UnsafeNoSync, Metrics: m, HotBytes: hotBudget(t, 3)})
	s, err := db.Resource(context.Background(), ResourceOptions{Identity: podsID, Codec: podCodec})
	must(t, err)
	for i := range 5 {
		// Probation's half of the budget holds one: keeps p4.
		must(t, s.Add(mkPod("ns", fmt.Sprintf("p%d", i), "1")))
	}
	if got := hotSeries("evictions"); got != 4 {
		t.Errorf("evictions after 5 writes into probation of 1.5 = %v, want 4", got)
	}
	// Hit (p4 moves to the main segment), misses put p3, p2 and p1 there
	// (evicting p4, the least recently used), miss (evicts p3).
	for _, key := range []string{"ns/p4", "ns/p3", "ns/p2", "ns/p1", "ns/p4"} {
		if _, ok, err := s.GetByKey(key); err != nil || !ok {
			t.Fatalf("GetByKey(%s) = %t, %v", key, ok, err)
		}
	}
	for name, want := range map[string]int64{"hits": 1, "misses": 4, "evictions": 6, "entries": 3} {
		if got := hotSeries(name); got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	if got, max := hotSeries("bytes"), *hotBudget(t, 3); got <= 0 || got > max {
		t.Errorf("bytes = %v, want in (0, %v]", got, max)
	}
	must(t, s.Close())
	if got := hotSeries("bytes"); got != 0 {
		t.Errorf("bytes after Close = %v, want 0", got)
	}
	if got := hotSeries("entries"); got != 0 {
		t.Errorf("entries after Close = %v, want 0", got)
	}
	// A second DB with the same Metrics adds to the same counts.
	db2 := openDB(t, tempPath(t), Options{Sync: UnsafeNoSync, Metrics: m})
	s2, err := db2.Resource(context.Background(), ResourceOptions{Identity: podsID, Codec: podCodec})
	must(t, err)
	if _, ok, err := s2.GetByKey("ns/missing"); err != nil || ok {
		t.Fatalf("GetByKey(missing) = %t, %v", ok, err)
	}
	must(t, s2.Add(mkPod("ns", "p0", "1")))
	if _, ok, err := s2.GetByKey("ns/p0"); err != nil || !ok {
		t.Fatalf("GetByKey = %t, %v", ok, err)
	}
	if got := hotSeries("hits"); got != 2 {
		t.Errorf("hits after a second DB's hit = %v, want 2", got)
	}
}

// TestHotTierProbationAdapts checks probation's share of the budget:
// writes that nothing reads shrink it to its least, a sixteenth, and the
// cached objects with it; a reader that reads each object some writes
// after it was written (a reconcile lagging its events) grows it until
// every read hits.
func TestHotTierProbationAdapts(t *testing.T) {
	const budget, lag = 64, 20
	db := openDB(t, tempPath(t), Options{Sync: UnsafeNoSync, HotBytes: hotBudget(t, budget)})
	c := &countingCodec{Codec: podCodec}
	s, err := db.Resource(context.Background(), ResourceOptions{Identity: podsID, Codec: c})
	must(t, err)
	name := func(i int) string { return fmt.Sprintf("p%03d", i) }
	for i := range 400 {
		must(t, s.Add(mkPod("ns", name(i), "1")))
	}
	share, least := s.hot.Tier().ProbationShare()
	if held := s.hot.Len(); share != least || held > budget/16+1 {
		t.Fatalf("after 400 writes nothing read: probation's share %d (least %d), %d objects held; want the least, at most %d objects", share, least, held, budget/16+1)
	}

	hits := 0
	for i := 400; i < 1000; i++ {
		must(t, s.Add(mkPod("ns", name(i), "1")))
		before := c.decoded.Load()
		if _, ok, err := s.GetByKey("ns/" + name(i-lag)); err != nil || !ok {
			t.Fatalf("GetByKey(%s) = %t, %v", name(i-lag), ok, err)
		}
		if i >= 900 && c.decoded.Load() == before {
			hits++
		}
	}
	if hits != 100 {
		t.Errorf("%d of the last 100 reads %d writes after their object's write served by the tier, want all", hits, lag)
	}
}

// TestHotTierRewriteEntersMain checks that objects written again soon
// after probation evicted them (a rollout's pods, while the rest of the
// cluster churns) enter the main segment and stay there, so that their
// next update finds the old object cached.
func TestHotTierRewriteEntersMain(t *testing.T) {
	db := openDB(t, tempPath(t), Options{Sync: UnsafeNoSync, HotBytes: hotBudget(t, 64)})
	s := openPods(t, db, nil)
	for i := range 400 {
		must(t, s.Add(mkPod("ns", fmt.Sprintf("cold%03d", i), "1")))
	}
	for round := range 4 {
		for i := range 8 { // more than probation holds at its least (4)
			must(t, s.Update(mkPod("ns", fmt.Sprintf("hot%d", i), fmt.Sprint(round+1))))
			must(t, s.Add(mkPod("ns", fmt.Sprintf("cold%03d", 400+8*round+i), "1")))
		}
	}
	for i := range 8 {
		e, ok := s.hot.Entry(fmt.Sprintf("ns/hot%d", i))
		if !ok || e.Probation {
			t.Errorf("hot%d after four rounds of writes: cached %t, in probation %t; want cached in the main segment", i, ok, e.Probation)
		}
	}
}

// TestHotTierDisabled checks that a budget of 0, for the DB or for one
// store, caches nothing: every point read decodes.
func TestHotTierDisabled(t *testing.T) {
	zero := ptrTo[int64](0)
	for _, tc := range []struct {
		name string
		db   Options
		res  *int64
	}{
		{"db", Options{HotBytes: zero}, nil},
		{"store", Options{}, zero},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.db.Sync = UnsafeNoSync
			db := openDB(t, tempPath(t), tc.db)
			c := &countingCodec{Codec: podCodec}
			s, err := db.Resource(context.Background(), ResourceOptions{Identity: podsID, Codec: c, HotBytes: tc.res})
			must(t, err)
			if s.hot != nil {
				t.Fatal("the store has a hot tier")
			}
			must(t, s.Add(mkPod("ns", "a", "1")))
			a1, _, err := s.GetByKey("ns/a")
			must(t, err)
			a2, _, err := s.GetByKey("ns/a")
			must(t, err)
			if a1 == a2 || c.decoded.Load() != 2 {
				t.Errorf("two reads decoded %d objects (same object: %t), want 2 distinct", c.decoded.Load(), a1 == a2)
			}
		})
	}
}

// TestHotTierDefault checks that the zero Options give the default budget,
// shared by the DB's stores.
func TestHotTierDefault(t *testing.T) {
	db := openDB(t, tempPath(t), Options{Sync: UnsafeNoSync})
	if db.hot == nil || db.hot.Budget() != DefaultHotBytes {
		t.Fatalf("default tier = %+v, want a budget of %d", db.hot, DefaultHotBytes)
	}
	s := openPods(t, db, nil)
	if s.hot == nil || s.hot.Tier() != db.hot {
		t.Error("the store does not share the DB's tier")
	}
}

// TestHotTierFilledByWrites checks that a read after a write returns the
// object written without decoding it, and that what the writer keeps is
// the object it was given (shared read-only, never copied or changed).
func TestHotTierFilledByWrites(t *testing.T) {
	db := openDB(t, tempPath(t), Options{Sync: UnsafeNoSync})
	c := &countingCodec{Codec: podCodec}
	s, err := db.Resource(context.Background(), ResourceOptions{Identity: podsID, Codec: c})
	must(t, err)
	a, b := mkPod("ns", "a", "1"), mkPod("ns", "b", "1")
	a2 := mkPod("ns", "a", "2")
	must(t, s.Apply(context.Background(), txns(a, b, a2), ""))
	for key, want := range map[string]*corev1.Pod{"ns/a": a2, "ns/b": b} {
		got, ok, err := s.GetByKey(key)
		if err != nil || !ok || got != want {
			t.Errorf("GetByKey(%s) = %p, %t, %v; want the object written (%p)", key, got, ok, err, want)
		}
	}
	must(t, s.Delete(b))
	if _, ok, err := s.GetByKey("ns/b"); err != nil || ok {
		t.Errorf("GetByKey after Delete = %t, %v", ok, err)
	}
	if n := c.decoded.Load(); n != 0 {
		t.Errorf("the reads decoded %d objects, want 0", n)
	}
}

// TestHotTierNeverStale checks that an object the tier holds is not
// returned once the stored bytes changed behind it: a relist (which does
// not fill the tier) replaced it.
func TestHotTierNeverStale(t *testing.T) {
	db := openDB(t, tempPath(t), Options{Sync: UnsafeNoSync})
	s := openPods(t, db, nil)
	must(t, s.Add(mkPod("ns", "a", "1")))
	if got, _, _ := s.GetByKey("ns/a"); got.(*corev1.Pod).ResourceVersion != "1" {
		t.Fatalf("GetByKey = rv %s", got.(*corev1.Pod).ResourceVersion)
	}
	must(t, s.Replace([]interface{}{mkPod("ns", "a", "2")}, "2"))
	got, ok, err := s.GetByKey("ns/a")
	if err != nil || !ok || got.(*corev1.Pod).ResourceVersion != "2" {
		t.Fatalf("GetByKey after a relist = %v, %t, %v; want rv 2", got, ok, err)
	}
}

// TestHotTierBulkReadsDoNotFill checks that List, ByIndex, Scan and Select
// of a store that does not fit in the tier take the objects the tier
// holds but neither fill it nor count in its hit rate (TestHotTierWhole:
// a store that fits).
func TestHotTierBulkReadsDoNotFill(t *testing.T) {
	m := newTestMetrics()
	hotSeries := func(name string) int64 { return m.hotCount(podsID.String(), name) }
	db := openDB(t, tempPath(t), Options{Sync: UnsafeNoSync, Metrics: m, HotBytes: hotBudget(t, 100)})
	s, err := db.Resource(context.Background(), ResourceOptions{Identity: podsID, Codec: podCodec, Indexers: namespaceIndexers()})
	must(t, err)
	var pods []*corev1.Pod
	for i := range 300 {
		pods = append(pods, mkPod("ns", fmt.Sprintf("p%03d", i), "1"))
	}
	must(t, s.Replace(asObjects(pods), "1")) // a relist fills nothing
	cached, _, err := s.GetByKey("ns/p007")
	must(t, err)
	entries := hotSeries("entries")
	if entries != 1 {
		t.Fatalf("entries after one point read = %v, want 1", entries)
	}
	reads := map[string]func() []interface{}{
		"List": s.List,
		"ByIndex": func() []interface{} {
			out, err := s.ByIndex(cache.NamespaceIndex, "ns")
			must(t, err)
			return out
		},
		"Scan": func() []interface{} {
			var out []interface{}
			must(t, s.Scan(context.Background(), func(_ string, obj interface{}) error { out = append(out, obj); return nil }))
			return out
		},
		"Select": func() []interface{} {
			var out []interface{}
			must(t, s.Select(context.Background(), store.Selection{Namespace: "ns"}, func(_ string, obj interface{}) error { out = append(out, obj); return nil }))
			return out
		},
	}
	for name, read := range reads {
		out := read()
		if len(out) != 300 || out[7] != cached {
			t.Errorf("%s returned %d objects, the cached one taken: %t", name, len(out), len(out) > 7 && out[7] == cached)
		}
		if got := hotSeries("entries"); got != entries {
			t.Errorf("%s: entries = %v, want %v", name, got, entries)
		}
	}
	if h, m := hotSeries("hits"), hotSeries("misses"); h != 0 || m != 1 {
		t.Errorf("hits, misses = %v, %v; want 0, 1 (bulk reads do not count)", h, m)
	}
}

// TestHotTierSharedBudget checks that the stores of a DB share its
// budget: one store's reads evict the other's objects, and a store with
// its own budget is apart.
func TestHotTierSharedBudget(t *testing.T) {
	m := newTestMetrics()
	db := openDB(t, tempPath(t), Options{Sync: UnsafeNoSync, Metrics: m, HotBytes: hotBudget(t, 2)})
	a, err := db.Resource(context.Background(), ResourceOptions{Identity: podsID, Codec: podCodec})
	must(t, err)
	otherID := podsID
	otherID.Namespace = "other"
	b, err := db.Resource(context.Background(), ResourceOptions{Identity: otherID, Codec: podCodec})
	must(t, err)
	own := otherID
	own.Namespace = "own"
	c, err := db.Resource(context.Background(), ResourceOptions{Identity: own, Codec: podCodec, HotBytes: hotBudget(t, 2)})
	must(t, err)
	must(t, a.Add(mkPod("ns", "p0", "1")))
	must(t, c.Add(mkPod("ns", "p0", "1")))
	must(t, b.Add(mkPod("ns", "p1", "1")))
	must(t, b.Add(mkPod("ns", "p2", "1")))
	if got := m.hotCount(podsID.String(), "evictions"); got != 1 {
		t.Errorf("evictions of %s = %v, want 1 (the other store filled the shared tier)", podsID, got)
	}
	if c.hot.Len() != 1 {
		t.Errorf("the store with its own tier lost its object")
	}
	if !strings.Contains(podsID.String(), "pods") {
		t.Errorf("resource label %q does not name the resource", podsID.String())
	}
}

func txns(objs ...*corev1.Pod) []cache.Transaction {
	out := make([]cache.Transaction, len(objs))
	for i, o := range objs {
		out[i] = cache.Transaction{Type: cache.TransactionTypeUpdate, Object: o}
	}
	return out
}

func asObjects(pods []*corev1.Pod) []interface{} {
	out := make([]interface{}, len(pods))
	for i, p := range pods {
		out[i] = p
	}
	return out
}

// TestHotTierFastPath checks the point reads that skip the transaction:
// after a write or a checked read, GetByKey returns the cached object
// without decoding; after a write the store did not put in the tier (a
// relist's commit), it reads the file again and returns the new object.
func TestHotTierFastPath(t *testing.T) {
	db := openDB(t, tempPath(t), Options{Sync: UnsafeNoSync})
	c := &countingCodec{Codec: podCodec}
	s, err := db.Resource(context.Background(), ResourceOptions{Identity: podsID, Codec: c})
	must(t, err)
	must(t, s.Replace([]interface{}{mkPod("ns", "a", "1"), mkPod("ns", "b", "1")}, "1"))
	a1, _, err := s.GetByKey("ns/a") // decodes, fast from now on
	must(t, err)
	for range 3 {
		if got, _, err := s.GetByKey("ns/a"); err != nil || got != a1 {
			t.Fatalf("GetByKey = %p, %v; want the cached %p", got, err, a1)
		}
	}
	if n := c.decoded.Load(); n != 1 {
		t.Errorf("four reads decoded %d objects, want 1", n)
	}
	if e, _ := s.hot.Entry("ns/a"); !e.Fast {
		t.Error("the entry a read put with no write since is not fast")
	}
	s.Bookmark("2")
	if e, _ := s.hot.Entry("ns/a"); !e.Fast || e.Epoch != db.hotEpoch.Load() {
		t.Error("a bookmark made the entries slow")
	}
	must(t, s.Replace([]interface{}{mkPod("ns", "a", "3")}, "3"))
	got, ok, err := s.GetByKey("ns/a")
	if err != nil || !ok || got.(*corev1.Pod).ResourceVersion != "3" {
		t.Fatalf("GetByKey after a relist = %v, %t, %v; want rv 3", got, ok, err)
	}
	if _, ok, err := s.GetByKey("ns/b"); err != nil || ok {
		t.Fatalf("GetByKey of a key the relist removed = %t, %v", ok, err)
	}
	// A read that began before a write and puts its older object after
	// the write's commit leaves it checked against the file, not fast.
	st := s.hot.Stamp()
	old, _, err := s.GetByKey("ns/a")
	must(t, err)
	must(t, s.Add(mkPod("ns", "a", "5")))
	s.hot.Put("ns/a", 1, 100, old, st)
	if got, _, err := s.GetByKey("ns/a"); err != nil || got.(*corev1.Pod).ResourceVersion != "5" {
		t.Fatalf("GetByKey after a racing read's put = %v, %v; want rv 5", got, err)
	}
	must(t, s.Delete(mkPod("ns", "a", "4")))
	if _, ok, err := s.GetByKey("ns/a"); err != nil || ok {
		t.Fatalf("GetByKey after Delete = %t, %v", ok, err)
	}
}

// TestHotTierConcurrentReadsAndWrites races point reads against writes of
// the same keys and relists: each reader sees every key's resourceVersion
// go forward only, and once the writers are done every read returns the
// last one written (a read that put an entry while a write committed must
// not leave the older object fast).
func TestHotTierConcurrentReadsAndWrites(t *testing.T) {
	db := openDB(t, tempPath(t), Options{Sync: UnsafeNoSync})
	s := openPods(t, db, nil)
	const keys, writes = 4, 300
	ctx := context.Background()
	done := make(chan struct{})
	errs := make(chan error, 4)
	for range 3 {
		go func() {
			last := make([]int, keys)
			for {
				select {
				case <-done:
					errs <- nil
					return
				default:
				}
				for k := range keys {
					obj, ok, err := s.GetByKey(fmt.Sprintf("ns/p%d", k))
					if err != nil {
						errs <- err
						return
					}
					if !ok {
						continue
					}
					var rv int
					if _, err := fmt.Sscan(obj.(*corev1.Pod).ResourceVersion, &rv); err != nil {
						errs <- err
						return
					}
					if rv < last[k] {
						errs <- fmt.Errorf("key %d went back from rv %d to %d", k, last[k], rv)
						return
					}
					last[k] = rv
				}
			}
		}()
	}
	for w := 1; w <= writes; w++ {
		rv := fmt.Sprint(w)
		if w%50 == 0 {
			var list []interface{}
			for k := range keys {
				list = append(list, mkPod("ns", fmt.Sprintf("p%d", k), rv))
			}
			must(t, s.Replace(list, rv))
			continue
		}
		must(t, s.Apply(ctx, txns(mkPod("ns", fmt.Sprintf("p%d", w%keys), rv)), rv))
	}
	close(done)
	for range 3 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	for k := range keys {
		obj, ok, err := s.GetByKey(fmt.Sprintf("ns/p%d", k))
		if err != nil || !ok {
			t.Fatalf("GetByKey(p%d) = %t, %v", k, ok, err)
		}
		got := obj.(*corev1.Pod).ResourceVersion
		fresh, _, err := s.GetByKeyUncached(fmt.Sprintf("ns/p%d", k))
		must(t, err)
		if got != fresh.(*corev1.Pod).ResourceVersion {
			t.Errorf("p%d: GetByKey rv %s, the file holds %s", k, got, fresh.(*corev1.Pod).ResourceVersion)
		}
	}
}

// TestHotFillShares checks that a bulk read filling a hot tier large
// enough for its store decodes the objects the tier keeps sharing what
// they encode alike (decodeEntry's fillModel), each still equal to the
// object decoded apart; and that a read whose objects the tier cannot
// keep decodes each apart.
func TestHotFillShares(t *testing.T) {
	// The bound below counts the decoding goroutines: two, as on the
	// machines the project's figures come from.
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	const n = 600 // more than two chunks (scanChunk)
	written := make([]interface{}, n)
	for i := range written {
		p := mkPod("ns", fmt.Sprintf("p%03d", i), "5")
		if i%50 == 0 { // another shape now and then
			p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: fmt.Sprintf("side-%d", i), Image: "side"})
		}
		written[i] = p
	}
	path := tempPath(t)
	db := openDB(t, path, Options{Sync: UnsafeNoSync})
	must(t, openPods(t, db, nil).Replace(written, "10"))
	must(t, db.Close())
	list := func(t *testing.T, budget *int64) (objs []interface{}, distinct int) {
		db, err := Open(context.Background(), path, Options{Sync: UnsafeNoSync, HotBytes: budget})
		must(t, err)
		defer func() { must(t, db.Close()) }()
		objs = openPods(t, db, nil).List()
		if len(objs) != n {
			t.Fatalf("List: %d objects, want %d", len(objs), n)
		}
		containers := map[*corev1.Container]bool{}
		for _, obj := range objs {
			containers[&obj.(*corev1.Pod).Spec.Containers[0]] = true
		}
		return objs, len(containers)
	}
	apart, distinct := list(t, hotBudget(t, n/2))
	if distinct != n {
		t.Errorf("tier too small: %d distinct container lists in %d pods, want one each", distinct, n)
	}
	for i, obj := range apart {
		if !equality.Semantic.DeepEqual(obj, written[i]) {
			t.Fatalf("object %d: %#v, want %#v", i, obj, written[i])
		}
	}
	shared, distinct := list(t, nil)
	for i, obj := range shared {
		if !reflect.DeepEqual(obj, apart[i]) {
			t.Fatalf("object %d decoded for the tier: %#v, decoded apart %#v", i, obj, apart[i])
		}
	}
	// A pod shares the last decoded pod's containers if they are alike.
	// Own containers have: a pod of the other shape, and the pods that
	// began decoding once it was the model and before another pod became
	// it (at most one per decoding goroutine, g: the workers and the
	// collector), and the pods that began before their chunk had a model
	// (g per chunk).
	g := runtime.GOMAXPROCS(0) + 1
	if most := (g+1)*(n/50) + g*(n/scanChunk+1); distinct > most {
		t.Errorf("tier holds the store: %d distinct container lists in %d pods, want at most %d", distinct, n, most)
	}
}
