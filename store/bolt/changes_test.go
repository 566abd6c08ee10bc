package bolt

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	bbolt "go.etcd.io/bbolt"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/warmcache/warmcache/internal/podgen"
	"github.com/warmcache/warmcache/store"
	"github.com/warmcache/warmcache/store/bolt/internal/layout"
)

// generations returns the number of s's generation buckets.
func generations(t *testing.T, s *Store) int {
	t.Helper()
	n := 0
	if err := s.db.view("test", func(tx *bbolt.Tx) error {
		return tx.Bucket(s.bname).Bucket(layout.GenBucket).ForEachBucket(func([]byte) error { n++; return nil })
	}); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestChangesRetainedInFile checks that Commit keeps the replaced
// generation in the file until Release, and that a store closed (or a
// process stopped) before Release finds the committed content on the next
// open with the retained generation deleted.
func TestChangesRetainedInFile(t *testing.T) {
	ctx := context.Background()
	path := tempPath(t)
	db, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	s := openPods(t, db, nil)
	if err := s.Add(mkPod("ns", "a", "1")); err != nil {
		t.Fatal(err)
	}
	r, err := s.BeginReplace(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Add(ctx, mkPod("ns", "b", "2")); err != nil {
		t.Fatal(err)
	}
	if err := r.Commit(ctx, "3"); err != nil {
		t.Fatal(err)
	}
	if n := generations(t, s); n != 2 {
		t.Errorf("generations after Commit = %d, want 2 (live and retained)", n)
	}
	// Stop as a killed process would: the retained generation is left in
	// the file. (The crash test kills a real process at this point too.)
	s.mu.Lock()
	s.retained = nil
	s.mu.Unlock()
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = openDB(t, path, Options{})
	s = openPods(t, db, nil)
	if n := generations(t, s); n != 1 {
		t.Errorf("generations after reopen = %d, want 1", n)
	}
	if st := mustState(t, s); st.RV != "3" || !st.Complete || st.Interrupted {
		t.Errorf("state after reopen = %+v, want complete at RV 3", st)
	}
	if keys := s.ListKeys(); len(keys) != 1 || keys[0] != "ns/b" {
		t.Errorf("keys after reopen = %q, want [ns/b]", keys)
	}
	verifyClean(t, db)
}

// TestGetByKeyUncached checks that a writer's read neither fills nor
// reorders the hot tier.
func TestGetByKeyUncached(t *testing.T) {
	db := openDB(t, tempPath(t), Options{})
	s, err := db.Resource(context.Background(), ResourceOptions{Identity: podsID, Codec: podCodec, HotBytes: hotBudget(t, 3)})
	if err != nil {
		t.Fatal(err)
	}
	// The writes leave d in probation (the newest write); point reads put
	// what they decode in the main segment, beside it.
	for _, p := range []interface{}{mkPod("ns", "a", "1"), mkPod("ns", "b", "2"), mkPod("ns", "c", "3"), mkPod("ns", "d", "4")} {
		if err := s.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	get := func(get func(string) (interface{}, bool, error), key string) interface{} {
		t.Helper()
		obj, exists, err := get(key)
		if err != nil || !exists {
			t.Fatalf("get %s = %v, %v", key, exists, err)
		}
		return obj
	}
	a := get(s.GetByKey, "ns/a") // cached: a
	get(s.GetByKey, "ns/b")      // cached: b, a
	if got := get(s.GetByKeyUncached, "ns/a"); got != a {
		t.Error("GetByKeyUncached did not use the cached object")
	}
	get(s.GetByKeyUncached, "ns/c") // not cached, nothing evicted
	if got := get(func(k string) (interface{}, bool, error) { return store.GetUncached(s, k) }, "ns/a"); got != a {
		t.Error("store.GetUncached did not use the cached object")
	}
	_, cached := s.hot.Entry("ns/c")
	if cached {
		t.Error("GetByKeyUncached filled the cache")
	}
	// a is still the least recently used: a point read of c evicts it.
	get(s.GetByKey, "ns/c")
	if got := get(s.GetByKey, "ns/a"); got == a {
		t.Error("GetByKeyUncached reordered the cache: a was not evicted")
	}
}

// TestChangesSharedSharesWithTheNewObject: a relist's changes read with
// ChangesShared equal those Changes reads, and the old object of each
// updated key shares with its new one what the update left alone, unless
// the hot tier holds it (then both read the tier's object) or the new one
// (then the old one is decoded whole); Changes shares nothing. Enough keys change to be decoded on every core, over
// several chunks.
func TestChangesSharedSharesWithTheNewObject(t *testing.T) {
	ctx := context.Background()
	// A tier that holds the last hundred or so pods written.
	db := openDB(t, tempPath(t), Options{Sync: UnsafeNoSync, HotBytes: ptrTo[int64](1 << 20)})
	s := openPods(t, db, nil)
	const n = 3*scanChunk + 10
	withRV := func(i int, rv string, change func(*corev1.Pod)) *corev1.Pod {
		p := podgen.Pod(i)
		p.ResourceVersion = rv
		if change != nil {
			change(p)
		}
		return p
	}
	var txns []cache.Transaction
	for i := range n {
		txns = append(txns, cache.Transaction{Type: cache.TransactionTypeAdd, Object: withRV(i, "10", nil)})
	}
	must(t, s.Apply(ctx, txns, "10"))
	r, err := s.BeginReplace(ctx)
	must(t, err)
	var page []interface{}
	changed := 0
	for i := range n {
		switch i % 3 {
		case 0: // the metadata changes
			page = append(page, withRV(i, "20", func(p *corev1.Pod) { p.Annotations = map[string]string{"relisted": "yes"} }))
			changed++
		case 1: // the status changes
			page = append(page, withRV(i, "20", func(p *corev1.Pod) { p.Status.Message = "relisted" }))
			changed++
		default: // unchanged
			page = append(page, withRV(i, "10", nil))
		}
	}
	// Staged and committed without going through the tier.
	must(t, r.Add(ctx, page...))
	must(t, r.Commit(ctx, "20"))
	// The tier also holds some new objects, which a lister read: an old
	// object is not decoded sharing with those (a write may put in the
	// tier an object that differs from what its message decodes to).
	hotNew := map[string]interface{}{}
	for i := 0; i < n; i += 60 {
		ns, name := podgen.Key(i)
		obj, ok, err := s.GetByKey(ns + "/" + name)
		if err != nil || !ok {
			t.Fatalf("GetByKey %s/%s: %v, %v", ns, name, ok, err)
		}
		hotNew[ns+"/"+name] = obj
	}
	collect := func(read func(context.Context, store.ChangeFunc) error) []store.Change {
		var got []store.Change
		must(t, read(ctx, func(c store.Change) error { got = append(got, c); return nil }))
		return got
	}
	plain := collect(r.Changes)
	shared := collect(r.(store.SharedChanges).ChangesShared)
	must(t, r.Release())
	if len(plain) != changed || len(shared) != changed {
		t.Fatalf("Changes told %d changes, ChangesShared %d, want %d", len(plain), len(shared), changed)
	}
	sameContainers := func(c store.Change) bool {
		return reflect.ValueOf(c.Old.(*corev1.Pod).Spec.Containers).Pointer() == reflect.ValueOf(c.New.(*corev1.Pod).Spec.Containers).Pointer()
	}
	hot, sharedOnes := 0, 0
	for i, c := range shared {
		p := plain[i]
		if c.Key != p.Key || !reflect.DeepEqual(c.Old, p.Old) || !reflect.DeepEqual(c.New, p.New) {
			t.Fatalf("change %d: ChangesShared told %s, Changes %s", i, c.Key, p.Key)
		}
		if o, nw := c.Old.(*corev1.Pod), c.New.(*corev1.Pod); o.ResourceVersion != "10" || nw.ResourceVersion != "20" ||
			o.Annotations["relisted"] != "" || o.Status.Message != "" {
			t.Fatalf("%s: old object at %s (annotations %v, message %q), new at %s", c.Key, o.ResourceVersion, o.Annotations, o.Status.Message, nw.ResourceVersion)
		}
		if sameContainers(p) {
			t.Fatalf("%s: Changes shared the containers of the old and the new object", c.Key)
		}
		if h, ok := hotNew[c.Key]; ok {
			if c.New != h || p.New != h {
				t.Fatalf("%s: the new object is not the hot tier's", c.Key)
			}
			if sameContainers(c) {
				t.Fatalf("%s: the old object shares with the hot tier's new one", c.Key)
			}
			continue
		}
		if c.Old == p.Old { // both read the hot tier's object
			hot++
			continue
		}
		if !sameContainers(c) {
			t.Fatalf("%s: ChangesShared did not share the containers", c.Key)
		}
		sharedOnes++
	}
	if hot == 0 || sharedOnes == 0 {
		t.Fatalf("%d old objects from the hot tier and %d shared, want some of each", hot, sharedOnes)
	}
}

// undecodable returns env, the envelope of item key, with its payload's
// codec tag changed and its checksum made valid again: an envelope that
// reads but whose object does not decode.
func undecodable(t *testing.T, key string, env []byte) []byte {
	t.Helper()
	payload, err := layout.EnvelopePayload(env)
	must(t, err)
	body := append([]byte(nil), env[:len(env)-1-layout.SumLen]...) // the checksum element dropped
	body[len(body)-len(payload)] ^= 0xff
	return layout.SealEnvelope([]byte(key), body)
}

// TestChangesOfUnreadableObjects: a replaced object that cannot be
// compared or decoded (its checksum fails, or it does not decode) turns its
// key's update into an add (Old nil), never leaves it out, and makes its
// vanished key nothing (logged); a live one that does not decode stops
// Changes with ErrCorrupt before any change of its chunk is told, and it is
// the one reported even when a later live envelope is unreadable too.
// Changes and ChangesShared alike.
func TestChangesOfUnreadableObjects(t *testing.T) {
	ctx := context.Background()
	reads := map[string]func(store.Replace) func(context.Context, store.ChangeFunc) error{
		"Changes": func(r store.Replace) func(context.Context, store.ChangeFunc) error { return r.Changes },
		"ChangesShared": func(r store.Replace) func(context.Context, store.ChangeFunc) error {
			return r.(store.SharedChanges).ChangesShared
		},
	}
	// A replaced object whose checksum fails, or that does not decode.
	damages := map[string]func(t *testing.T, key string, env []byte) []byte{
		"checksum": func(_ *testing.T, _ string, env []byte) []byte {
			env = append([]byte(nil), env...)
			env[len(env)/2] ^= 0xff // inside the payload
			return env
		},
		"decode": undecodable,
	}
	for name, read := range reads {
		for damage, damaged := range damages {
			t.Run(name+"/replaced/"+damage, func(t *testing.T) {
				testChangesOfAnUnreadableReplacedObject(t, read, damaged)
			})
		}
		t.Run(name+"/live", func(t *testing.T) {
			db := openDB(t, damagedPath(t), Options{HotBytes: new(int64)})
			s := openPods(t, db, nil)
			for _, p := range []string{"a", "b", "c", "d"} {
				must(t, s.Add(mkPod("ns", p, "1")))
			}
			r, err := s.BeginReplace(ctx)
			must(t, err)
			for _, p := range []string{"a", "b", "c", "d"} {
				must(t, r.Add(ctx, mkPod("ns", p, "2")))
			}
			must(t, r.Commit(ctx, "2"))
			must(t, s.db.bolt.Update(func(tx *bbolt.Tx) error {
				_, g := rawLive(t, tx)
				setEnvelope(t, g, "ns/b", undecodable(t, "ns/b", rawEnvelope(t, g, "ns/b")))
				env := append([]byte(nil), rawEnvelope(t, g, "ns/c")...)
				env[len(env)/2] ^= 0xff // its checksum fails
				setEnvelope(t, g, "ns/c", env)
				return nil
			}))
			var got []store.Change
			err = read(r)(ctx, func(c store.Change) error { got = append(got, c); return nil })
			if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), `"ns/b"`) {
				t.Fatalf("error %v, want ErrCorrupt naming ns/b", err)
			}
			if len(got) != 0 {
				t.Fatalf("changes told before the corrupt object: %+v", got)
			}
		})
	}
}

// testChangesOfAnUnreadableReplacedObject: the replaced objects of ns/a
// (changed) and ns/c (vanished), damaged by damaged, make an add of ns/a
// and nothing of ns/c; ns/b is unchanged.
func testChangesOfAnUnreadableReplacedObject(t *testing.T, read func(store.Replace) func(context.Context, store.ChangeFunc) error,
	damaged func(t *testing.T, key string, env []byte) []byte) {
	ctx := context.Background()
	path := tempPath(t)
	db := openDB(t, path, Options{})
	s := openPods(t, db, nil)
	for _, p := range []string{"a", "b", "c"} {
		must(t, s.Add(mkPod("ns", p, "1")))
	}
	must(t, db.Close())
	rawUpdate(t, path, func(tx *bbolt.Tx) error {
		_, g := rawLive(t, tx)
		for _, k := range []string{"ns/a", "ns/c"} {
			setEnvelope(t, g, k, damaged(t, k, rawEnvelope(t, g, k)))
		}
		return nil
	})
	db = openDB(t, path, Options{})
	s = openPods(t, db, nil)
	r, err := s.BeginReplace(ctx)
	must(t, err)
	must(t, r.Add(ctx, mkPod("ns", "a", "2"), mkPod("ns", "b", "1")))
	must(t, r.Commit(ctx, "2")) // c vanished
	var got []store.Change
	must(t, read(r)(ctx, func(c store.Change) error { got = append(got, c); return nil }))
	must(t, r.Release())
	if len(got) != 1 || got[0].Key != "ns/a" || got[0].Old != nil || got[0].New.(*corev1.Pod).ResourceVersion != "2" {
		t.Fatalf("changes = %+v, want one add of ns/a at 2", got)
	}
}
