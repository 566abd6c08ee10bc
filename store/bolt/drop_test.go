package bolt

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	bbolt "go.etcd.io/bbolt"
	"k8s.io/klog/v2/ktesting"

	"github.com/warmcache/warmcache/store"
	"github.com/warmcache/warmcache/store/bolt/internal/layout"
)

// otherPodsID is a second resource beside podsID: same codec and type,
// another scope.
var otherPodsID = Identity{Version: "v1", Resource: "pods", Kind: "Pod", Scope: store.Scope{Namespace: "other"}}

// twoResources writes a file at path holding podsID (pods named
// drop-me-*) and otherPodsID (pods named keep-me-*), both closed.
func twoResources(t *testing.T, path string) {
	t.Helper()
	ctx := context.Background()
	db, err := Open(ctx, path, Options{Sync: UnsafeNoSync})
	must(t, err)
	s := openPods(t, db, namespaceIndexers())
	must(t, s.Replace([]interface{}{mkPod("ns", "drop-me-a", "1"), mkPod("ns", "drop-me-b", "2")}, "2"))
	o, err := db.Resource(ctx, ResourceOptions{Identity: otherPodsID, Codec: podCodec, Indexers: namespaceIndexers()})
	must(t, err)
	must(t, o.Replace([]interface{}{mkPod("other", "keep-me-a", "3")}, "3"))
	must(t, db.Close())
}

// recordedNames returns the identities recorded in db's file.
func recordedNames(t *testing.T, db *DB) []string {
	t.Helper()
	var out []string
	for _, m := range recordedMetas(t, db) {
		out = append(out, identityOf(&m).String())
	}
	return out
}

// verifyDecoded is verifyClean with the test codecs, so that the payloads
// of the resources not open are decoded too.
func verifyDecoded(t *testing.T, db *DB) {
	t.Helper()
	err := verifyDB(context.Background(), db, testCodecs, func(p Problem) { t.Errorf("Verify: %v", p) })
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
}

// TestDropResource checks that DropResource deletes one resource's data
// and nothing else, in a file that stays consistent, and that dropping
// what the file does not hold is not an error.
func TestDropResource(t *testing.T) {
	ctx := context.Background()
	path := tempPath(t)
	twoResources(t, path)
	l := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.BufferLogs(true)))
	db := openDB(t, path, Options{Sync: UnsafeNoSync, Logger: l})

	dropped, err := db.DropResource(ctx, podsID, DropOptions{})
	if err != nil || !dropped {
		t.Fatalf("DropResource = %v, %v, want true, nil", dropped, err)
	}
	if got, want := recordedNames(t, db), []string{otherPodsID.String()}; !slices.Equal(got, want) {
		t.Fatalf("recorded after the drop: %q, want %q", got, want)
	}
	if logs := l.GetSink().(ktesting.Underlier).GetBuffer().String(); !strings.Contains(logs, "Dropped the resource's data from the cache file") ||
		!strings.Contains(logs, `objects=2`) || !strings.Contains(logs, podCodec.Name()) {
		t.Errorf("no log line names the dropped resource's codec and objects:\n%s", logs)
	}
	verifyDecoded(t, db)

	o, err := db.Resource(ctx, ResourceOptions{Identity: otherPodsID, Codec: podCodec, Indexers: namespaceIndexers()})
	must(t, err)
	if st := mustState(t, o); st.Discarded != "" || st.Objects != 1 || st.RV != "3" {
		t.Fatalf("the other resource after the drop: %+v, want its object and RV", st)
	}
	if _, ok, err := o.GetByKey("other/keep-me-a"); !ok || err != nil {
		t.Fatalf("the other resource lost its object: %v, %v", ok, err)
	}
	must(t, o.Close())

	for _, id := range []Identity{podsID, {Version: "v1", Resource: "never-stored"}} {
		if dropped, err := db.DropResource(ctx, id, DropOptions{}); err != nil || dropped {
			t.Errorf("DropResource(%s) of a missing resource = %v, %v, want false, nil", id, dropped, err)
		}
	}
	s := openPods(t, db, namespaceIndexers())
	if st := mustState(t, s); st.Objects != 0 || st.RV != "" || st.Discarded != "" {
		t.Errorf("the dropped resource reopens as %+v, want new and empty", st)
	}
	must(t, s.Close())
}

// TestDropResourceKeep checks DropOptions.Keep: it sees the recorded codec
// and keeps the resource, writing nothing; a resource whose meta does not
// decode is dropped without asking, and counted as a corrupt meta.
func TestDropResourceKeep(t *testing.T) {
	ctx := context.Background()
	path := tempPath(t)
	twoResources(t, path)
	db := openDB(t, path, Options{Sync: UnsafeNoSync})
	var asked []string
	keep := DropOptions{Keep: func(c string) bool { asked = append(asked, c); return true }}
	if dropped, err := db.DropResource(ctx, podsID, keep); err != nil || dropped {
		t.Fatalf("DropResource with Keep true = %v, %v, want false, nil", dropped, err)
	}
	if want := []string{podCodec.Name()}; !slices.Equal(asked, want) {
		t.Fatalf("Keep asked about %q, want %q", asked, want)
	}
	if got := recordedNames(t, db); len(got) != 2 {
		t.Fatalf("recorded after a kept drop: %q, want both", got)
	}
	if dropped, err := db.DropResource(ctx, podsID, DropOptions{Keep: func(string) bool { return false }}); err != nil || !dropped {
		t.Fatalf("DropResource with Keep false = %v, %v, want true, nil", dropped, err)
	}
	must(t, db.Close())

	rawUpdate(t, path, func(tx *bbolt.Tx) error {
		res := tx.Bucket([]byte(otherPodsID.String()))
		v := slices.Clone(res.Get(layout.MetaKey))
		v[len(v)/2] ^= 0x01
		return res.Put(layout.MetaKey, v)
	})
	m := newTestMetrics()
	db = openDB(t, path, Options{Sync: UnsafeNoSync, Metrics: m})
	asked = nil
	if dropped, err := db.DropResource(ctx, otherPodsID, keep); err != nil || !dropped {
		t.Fatalf("DropResource of a damaged meta = %v, %v, want true, nil", dropped, err)
	}
	if len(asked) != 0 {
		t.Errorf("Keep asked about %q for a meta that does not decode", asked)
	}
	if got := recordedNames(t, db); len(got) != 0 {
		t.Errorf("recorded after dropping both: %q", got)
	}
	if n, _ := m.corruptCount(otherPodsID.String(), layout.PartMeta); n != 1 {
		t.Errorf("corrupt records counted for part meta = %v, want 1", n)
	}
	verifyDecoded(t, db)
}

// TestDropResourceRefused checks what DropResource refuses, leaving the
// file as it was: an open Store of the resource, a read-only DB, an
// invalid identity, a closed DB, a resource being dropped (which Resource
// refuses too).
func TestDropResourceRefused(t *testing.T) {
	ctx := context.Background()
	path := tempPath(t)
	twoResources(t, path)

	db := openDB(t, path, Options{Sync: UnsafeNoSync})
	s := openPods(t, db, namespaceIndexers())
	if dropped, err := db.DropResource(ctx, podsID, DropOptions{}); !errors.Is(err, ErrResourceInUse) || dropped {
		t.Errorf("DropResource of an open resource = %v, %v, want ErrResourceInUse", dropped, err)
	}
	if st := mustState(t, s); st.Objects != 2 {
		t.Errorf("the open resource after a refused drop: %+v", st)
	}
	must(t, s.Close())
	if _, err := db.DropResource(ctx, Identity{Resource: "pods"}, DropOptions{}); !errors.Is(err, ErrInvalidOptions) {
		t.Errorf("DropResource of an identity without version = %v, want ErrInvalidOptions", err)
	}
	// While a drop runs, its resource is reserved: Resource refuses it
	// rather than open a Store whose bucket is being deleted.
	must(t, db.reserve(podsID.String()))
	if _, err := db.Resource(ctx, ResourceOptions{Identity: podsID, Codec: podCodec}); !errors.Is(err, ErrResourceInUse) {
		t.Errorf("Resource of a resource being dropped = %v, want ErrResourceInUse", err)
	}
	if _, err := db.DropResource(ctx, podsID, DropOptions{}); !errors.Is(err, ErrResourceInUse) {
		t.Errorf("DropResource of a resource being dropped = %v, want ErrResourceInUse", err)
	}
	db.release(podsID.String())
	must(t, db.Close())
	if _, err := db.DropResource(ctx, podsID, DropOptions{}); !errors.Is(err, ErrClosed) {
		t.Errorf("DropResource on a closed DB = %v, want ErrClosed", err)
	}

	ro := openDB(t, path, Options{ReadOnly: true})
	if dropped, err := ro.DropResource(ctx, podsID, DropOptions{}); !errors.Is(err, ErrReadOnly) || dropped {
		t.Errorf("DropResource(%s) on a read-only DB = %v, %v, want ErrReadOnly", podsID, dropped, err)
	}
	// Nothing to delete, or a resource kept, is no error even read-only.
	keep := DropOptions{Keep: func(string) bool { return true }}
	for _, c := range []struct {
		id   Identity
		opts DropOptions
	}{{Identity{Version: "v1", Resource: "never-stored"}, DropOptions{}}, {podsID, keep}} {
		if dropped, err := ro.DropResource(ctx, c.id, c.opts); err != nil || dropped {
			t.Errorf("DropResource(%s) on a read-only DB, nothing to drop = %v, %v, want false, nil", c.id, dropped, err)
		}
	}
	if got := recordedNames(t, ro); len(got) != 2 {
		t.Errorf("recorded after refused drops: %q, want both", got)
	}
	verifyDecoded(t, ro)
}
