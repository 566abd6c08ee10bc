package inspect_test

import (
	"context"
	"testing"

	"github.com/warmcache/warmcache/store/bolt"
	"github.com/warmcache/warmcache/store/bolt/inspect"
)

// TestFillingResource checks what the inspection of a file left by a
// fill that did not commit reports, read-only as the snapshot CLI reads
// it: the state filling, its objects and no resourceVersion, index entries
// that agree with its items (Verify), and an interrupted relist for a
// recorded store.
func TestFillingResource(t *testing.T) {
	ctx := context.Background()
	path := tempPath(t)
	db, err := bolt.Open(ctx, path, bolt.Options{Sync: bolt.UnsafeNoSync})
	must(t, err)
	pods := openPods(t, db, nodeIndexers())
	f, err := pods.BeginFill(ctx)
	must(t, err)
	must(t, f.Add(ctx, mkPod("ns", "a", "5"), mkPod("other", "b", "6")))
	must(t, db.Close()) // the fill never commits

	db = openDB(t, path, bolt.Options{ReadOnly: true})
	infos, err := inspect.Resources(ctx, db)
	must(t, err)
	if len(infos) != 1 || infos[0].State != inspect.StateFilling || infos[0].Objects != 2 || infos[0].ResourceVersion != "" {
		t.Fatalf("Resources = %+v, want one resource filling with 2 objects and no resourceVersion", infos)
	}
	verifyClean(t, db)
	s, err := inspect.OpenRecorded(ctx, db, infos[0].Identity, recordedCodec(t, infos[0]))
	must(t, err)
	defer func() { _ = s.Close() }()
	if st, err := s.State(); err != nil || st.Complete || !st.RelistInterrupted || st.ResourceVersion != "" {
		t.Errorf("State of the recorded store = %+v, %v; want incomplete, an interrupted relist, no resourceVersion", st, err)
	}
}
