package bolt

import (
	"context"
	"slices"
	"testing"

	bbolt "go.etcd.io/bbolt"
	"k8s.io/client-go/tools/cache"

	"github.com/warmcache/warmcache/store/bolt/internal/layout"
	"github.com/warmcache/warmcache/store/codec"
)

// TestVerifyDetects damages a sound file with raw bbolt writes, the way a
// bug would, and checks that Verify reports each kind of damage.
func TestVerifyDetects(t *testing.T) {
	tests := []struct {
		name   string
		damage func(t *testing.T, tx *bbolt.Tx)
		want   ProblemKind
		key    string
	}{
		{"index entry without item", func(t *testing.T, tx *bbolt.Tx) {
			_, g := rawLive(t, tx)
			putIndexEntry(t, g, cache.NamespaceIndex, "ns", "ns/ghost")
		}, ProblemIndexWithoutItem, "ns/ghost"},
		{"index entry not in reverse", func(t *testing.T, tx *bbolt.Tx) {
			_, g := rawLive(t, tx)
			putIndexEntry(t, g, cache.NamespaceIndex, "elsewhere", "ns/a")
		}, ProblemIndexWithoutReverse, "ns/a"},
		{"missing index entry", func(t *testing.T, tx *bbolt.Tx) {
			_, g := rawLive(t, tx)
			must(t, g.Index.Bucket([]byte(cache.NamespaceIndex)).Delete(layout.IndexKey("ns", "ns/b")))
		}, ProblemReverseWithoutIndex, "ns/b"},
		{"envelope without item", func(t *testing.T, tx *bbolt.Tx) {
			_, g := rawLive(t, tx)
			must(t, g.Items.Delete([]byte("ns/c")))
		}, ProblemBlobWithoutItem, ""},
		{"item without envelope", func(t *testing.T, tx *bbolt.Tx) {
			_, g := rawLive(t, tx)
			id, _, err := layout.SplitItemEntry([]byte("ns/c"), g.Items.Get([]byte("ns/c")))
			must(t, err)
			must(t, g.Blobs.Delete(append([]byte(nil), id...)))
		}, ProblemItem, "ns/c"},
		{"envelope shared by two items", func(t *testing.T, tx *bbolt.Tx) {
			_, g := rawLive(t, tx)
			a, b := itemEntry(t, g, "ns/a"), itemEntry(t, g, "ns/b")
			must(t, g.Items.Put([]byte("ns/b"), appendItemEntry("ns/b", a.ID, b.Select, b.Reverse)))
		}, ProblemItem, "ns/b"},
		{"item entry shorter than a blob id", func(t *testing.T, tx *bbolt.Tx) {
			_, g := rawLive(t, tx)
			must(t, g.Items.Put([]byte("ns/b"), layout.SealItemEntry([]byte("ns/b"), []byte{1, 2, 3})))
		}, ProblemItem, "ns/b"},
		{"reverse entry does not decode", func(t *testing.T, tx *bbolt.Tx) {
			_, g := rawLive(t, tx)
			b := itemEntry(t, g, "ns/b")
			must(t, g.Items.Put([]byte("ns/b"), appendItemEntry("ns/b", b.ID, b.Select, []byte{0x81, 0xa1})))
		}, ProblemReverseWithoutIndex, "ns/b"},
		{"labels differ from the object's", func(t *testing.T, tx *bbolt.Tx) {
			_, g := rawLive(t, tx)
			b := itemEntry(t, g, "ns/b")
			other := mkPod("ns", "b", "2")
			other.Labels = map[string]string{"app": "other"}
			must(t, g.Items.Put([]byte("ns/b"), appendItemEntry("ns/b", b.ID, layout.AppendSelectPart(nil, "ns/b", other), b.Reverse)))
		}, ProblemSelectPart, "ns/b"},
		{"labels missing", func(t *testing.T, tx *bbolt.Tx) {
			_, g := rawLive(t, tx)
			b := itemEntry(t, g, "ns/b")
			must(t, g.Items.Put([]byte("ns/b"), appendItemEntry("ns/b", b.ID, []byte{0xc0, 0x80}, b.Reverse)))
		}, ProblemSelectPart, "ns/b"},
		{"namespace differs from the object's", func(t *testing.T, tx *bbolt.Tx) {
			_, g := rawLive(t, tx)
			b := itemEntry(t, g, "ns/b")
			must(t, g.Items.Put([]byte("ns/b"), appendItemEntry("ns/b", b.ID, layout.AppendSelectPart(nil, "ns/b", mkPod("elsewhere", "b", "2")), b.Reverse)))
		}, ProblemSelectPart, "ns/b"},
		{"select part does not parse", func(t *testing.T, tx *bbolt.Tx) {
			_, g := rawLive(t, tx)
			b := itemEntry(t, g, "ns/b")
			must(t, g.Items.Put([]byte("ns/b"), appendItemEntry("ns/b", b.ID, []byte{0xa5, 'x'}, b.Reverse)))
		}, ProblemSelectPart, "ns/b"},
		{"envelope RV differs from the object's", func(t *testing.T, tx *bbolt.Tx) {
			_, g := rawLive(t, tx)
			env, err := layout.DecodeEnvelope(rawEnvelope(t, g, "ns/a"))
			must(t, err)
			setEnvelope(t, g, "ns/a", layout.EncodeEnvelope("ns/a", "999", env.UID, env.Payload))
		}, ProblemItem, "ns/a"},
		{"payload does not decode", func(t *testing.T, tx *bbolt.Tx) {
			_, g := rawLive(t, tx)
			setEnvelope(t, g, "ns/b", layout.EncodeEnvelope("ns/b", "2", "", []byte("garbage")))
		}, ProblemItem, "ns/b"},
		{"envelope does not decode", func(t *testing.T, tx *bbolt.Tx) {
			_, g := rawLive(t, tx)
			setEnvelope(t, g, "ns/b", layout.SealEnvelope([]byte("ns/b"), []byte{0x94, 0xd9}))
		}, ProblemItem, "ns/b"},
		{"wrong count", func(t *testing.T, tx *bbolt.Tx) {
			res, _ := rawLive(t, tx)
			m, err := layout.DecodeMeta(res.Get(layout.MetaKey))
			must(t, err)
			m.Objects++
			b, err := layout.EncodeMeta(&m)
			must(t, err)
			must(t, res.Put(layout.MetaKey, b))
		}, ProblemCount, ""},
		{"envelope sequence behind", func(t *testing.T, tx *bbolt.Tx) {
			_, g := rawLive(t, tx)
			must(t, g.Blobs.SetSequence(1))
		}, ProblemLayout, ""},
		{"older schema", func(t *testing.T, tx *bbolt.Tx) {
			res, _ := rawLive(t, tx)
			m, err := layout.DecodeMeta(res.Get(layout.MetaKey))
			must(t, err)
			m.Schema = 1
			b, err := layout.EncodeMeta(&m)
			must(t, err)
			must(t, res.Put(layout.MetaKey, b))
		}, ProblemMeta, ""},
		{"unrecorded index bucket", func(t *testing.T, tx *bbolt.Tx) {
			_, g := rawLive(t, tx)
			_, err := g.Index.CreateBucket([]byte("stray"))
			must(t, err)
		}, ProblemLayout, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			path := damagedPath(t)
			writeThreePods(t, path)
			rawUpdate(t, path, func(tx *bbolt.Tx) error { tc.damage(t, tx); return nil })

			// Read-only, as the snapshot CLI would, with codecs by name.
			db := openDB(t, path, Options{ReadOnly: true})
			var got []Problem
			must(t, verifyDB(ctx, db, func(name string) (codec.Codec, error) { return codec.ByName(nil, name) }, func(p Problem) { got = append(got, p) }))
			found := slices.ContainsFunc(got, func(p Problem) bool { return p.Kind == tc.want && p.Key == tc.key })
			if !found {
				t.Errorf("Verify reported %v, want a %s problem for %q", got, tc.want, tc.key)
			}
		})
	}
}

// TestVerifyClean checks that Verify reports nothing on a sound file and
// that, without a codec, it says the payloads were not checked.
func TestVerifyClean(t *testing.T) {
	ctx := context.Background()
	path := tempPath(t)
	db, err := Open(ctx, path, Options{Sync: UnsafeNoSync})
	must(t, err)
	s := openPods(t, db, nodeIndexers())
	must(t, s.Replace([]interface{}{mkPod("ns", "a", "1"), mkPod("x\x00y", "b\x01", "2")}, "2"))
	verifyClean(t, db)
	must(t, db.Close())

	db = openDB(t, path, Options{ReadOnly: true})
	var got []Problem
	must(t, verifyDB(ctx, db, nil, func(p Problem) { got = append(got, p) }))
	if len(got) != 1 || got[0].Kind != ProblemNotDecoded {
		t.Errorf("Verify without a codec = %v, want one %s", got, ProblemNotDecoded)
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
