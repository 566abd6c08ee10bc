package bolt

import (
	"context"
	"errors"
	"strings"
	"testing"

	bbolt "go.etcd.io/bbolt"
	"k8s.io/client-go/tools/cache"

	"github.com/warmcache/warmcache/store/bolt/internal/layout"
)

// TestUndecodableItem checks what reads do with an item that does not
// decode: List and ByIndex skip it, GetByKey and Scan return ErrCorrupt,
// the resource is marked incomplete in the file (the next start relists)
// and OnCorruption is called; a committed Replace makes it complete again.
func TestUndecodableItem(t *testing.T) {
	ctx := context.Background()
	path := tempPath(t)
	writeThreePods(t, path)
	rawUpdate(t, path, func(tx *bbolt.Tx) error {
		_, g := rawLive(t, tx)
		setEnvelope(t, g, "ns/b", layout.EncodeEnvelope("ns/b", "2", "", []byte("not protobuf")))
		return nil
	})

	db := openDB(t, path, Options{Sync: UnsafeNoSync})
	var reported []error
	s, err := db.Resource(ctx, ResourceOptions{Identity: podsID, Codec: podCodec, Indexers: namespaceIndexers(),
		OnCorruption: func(err error) { reported = append(reported, err) }})
	must(t, err)
	if st := mustState(t, s); !st.Complete {
		t.Fatalf("state before reading = %+v, want complete", st)
	}
	if got := podsOf(t, s.List()); len(got) != 2 || got["ns/b"] != nil {
		t.Errorf("List = %v, want ns/a and ns/c", got)
	}
	if len(reported) != 1 || !errors.Is(reported[0], ErrCorrupt) || !strings.Contains(reported[0].Error(), "ns/b") {
		t.Errorf("OnCorruption got %v, want one ErrCorrupt naming ns/b", reported)
	}
	if st := mustState(t, s); st.Complete {
		t.Errorf("state after a skipped object = %+v, want incomplete", st)
	}
	if objs, err := s.ByIndex(cache.NamespaceIndex, "ns"); err != nil || len(objs) != 2 {
		t.Errorf("ByIndex = %d objects, %v; want 2", len(objs), err)
	}
	if _, _, err := s.GetByKey("ns/b"); !errors.Is(err, ErrCorrupt) {
		t.Errorf("GetByKey(ns/b) = %v, want ErrCorrupt", err)
	}
	if err := s.Scan(ctx, func(string, interface{}) error { return nil }); !errors.Is(err, ErrCorrupt) {
		t.Errorf("Scan = %v, want ErrCorrupt", err)
	}
	if rv, ok, err := s.ResourceVersionOf("ns/b"); err != nil || !ok || rv != "2" {
		t.Errorf("ResourceVersionOf(ns/b) = %q, %v, %v; the envelope is intact", rv, ok, err)
	}
	must(t, db.Close())

	// The next start sees the incomplete state and relists.
	db = openDB(t, path, Options{Sync: UnsafeNoSync})
	s = openPods(t, db, namespaceIndexers())
	if st := mustState(t, s); st.Complete || st.RV != "3" {
		t.Errorf("state after reopen = %+v, want incomplete at RV 3", st)
	}
	if infos := recordedMetas(t, db); len(infos) != 1 || infos[0].State != layout.StateIncomplete || !strings.Contains(infos[0].Reason, "ns/b") {
		t.Errorf("recorded resources = %+v; want incomplete naming ns/b", infos)
	}
	must(t, s.Replace([]interface{}{mkPod("ns", "a", "4")}, "4"))
	if st := mustState(t, s); !st.Complete || st.RV != "4" {
		t.Errorf("state after a relist = %+v, want complete at RV 4", st)
	}
	verifyClean(t, db)
}
