package bolt

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	bbolt "go.etcd.io/bbolt"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"

	"github.com/warmcache/warmcache/store"
	"github.com/warmcache/warmcache/store/bolt/internal/layout"
)

// TestChecksumMismatchTakesTheCorruptionPath damages one byte of a stored
// record behind the store's back, as a disk would (no checksum
// recomputed), and checks what the reads that meet it do: skip the object
// (or, for a point read, return an error matching ErrChecksum), log it,
// count it by part in warmcache_store_corrupt_objects_total, mark the
// resource incomplete and call OnCorruption naming the key; nothing
// damaged is returned.
func TestChecksumMismatchTakesTheCorruptionPath(t *testing.T) {
	tests := []struct {
		name   string
		part   string
		damage func(t *testing.T, g *layout.Generation)
		read   func(s *Store) ([]interface{}, error)
	}{
		{"payload", layout.PartEnvelope, func(t *testing.T, g *layout.Generation) {
			id := itemEntry(t, g, "ns/b").ID
			env := slices.Clone(rawEnvelope(t, g, "ns/b"))
			env[len(env)/2] ^= 0x01
			must(t, g.Blobs.Put(slices.Clone(id), env))
		}, func(s *Store) ([]interface{}, error) { return s.List(), nil }},
		{"resourceVersion in the envelope", layout.PartEnvelope, func(t *testing.T, g *layout.Generation) {
			id := itemEntry(t, g, "ns/b").ID
			env := slices.Clone(rawEnvelope(t, g, "ns/b"))
			env[2] ^= 0x01 // the first byte of the rv string
			must(t, g.Blobs.Put(slices.Clone(id), env))
		}, func(s *Store) ([]interface{}, error) {
			_, _, err := s.ResourceVersionOf("ns/b")
			return nil, err
		}},
		{"label in the item entry", layout.PartItem, func(t *testing.T, g *layout.Generation) {
			v := slices.Clone(g.Items.Get([]byte("ns/b")))
			i := len(v) - layout.SumLen - 1 // the last byte of the last label value
			v[i] ^= 0x01
			must(t, g.Items.Put([]byte("ns/b"), v))
		}, func(s *Store) ([]interface{}, error) {
			var out []interface{}
			err := s.Select(context.Background(), store.Selection{Labels: labels.SelectorFromSet(labels.Set{"app": "b"})}, func(_ string, obj interface{}) error {
				out = append(out, obj)
				return nil
			})
			return out, err
		}},
		{"index entry", layout.PartIndex, func(t *testing.T, g *layout.Generation) {
			b := g.Index.Bucket([]byte(cache.NamespaceIndex))
			k := layout.IndexKey("ns", "ns/b")
			v := slices.Clone(b.Get(k))
			v[0] ^= 0x01
			must(t, b.Put(k, v))
		}, func(s *Store) ([]interface{}, error) { return s.ByIndex(cache.NamespaceIndex, "ns") }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			path := damagedPath(t)
			writeThreePods(t, path)
			rawUpdate(t, path, func(tx *bbolt.Tx) error {
				_, g := rawLive(t, tx)
				tc.damage(t, g)
				return nil
			})

			m := newTestMetrics()
			db := openDB(t, path, Options{Sync: UnsafeNoSync, Metrics: m})
			var reported []error
			s, err := db.Resource(ctx, ResourceOptions{Identity: podsID, Codec: podCodec, Indexers: namespaceIndexers(),
				OnCorruption: func(err error) { reported = append(reported, err) }})
			must(t, err)
			// A sound object reads as before, through the hot tier.
			if _, _, err := s.GetByKey("ns/a"); err != nil {
				t.Fatal(err)
			}
			objs, err := tc.read(s)
			if tc.part == layout.PartEnvelope && tc.name != "payload" || tc.part == layout.PartItem {
				if !errors.Is(err, ErrChecksum) || !errors.Is(err, ErrCorrupt) {
					t.Errorf("read = %v, want ErrChecksum and ErrCorrupt", err)
				}
			} else if err != nil {
				t.Errorf("read = %v, want the damaged object skipped", err)
			}
			if got := podsOf(t, objs); got["ns/b"] != nil {
				t.Errorf("the read returned the damaged object: %v", got["ns/b"])
			}
			if len(reported) != 1 || !errors.Is(reported[0], ErrChecksum) || !strings.Contains(reported[0].Error(), "ns/b") ||
				!strings.Contains(reported[0].Error(), tc.part+" checksum mismatch") {
				t.Errorf("OnCorruption got %v, want one %s checksum mismatch naming ns/b", reported, tc.part)
			}
			if st := mustState(t, s); st.Complete {
				t.Errorf("state = %+v, want incomplete", st)
			}
			if n, series := m.corruptCount(podsID.String(), tc.part); n != 1 || series != 1 {
				t.Errorf("corrupt records counted for part %q = %v, in %d series; want 1, in 1", tc.part, n, series)
			}
			if _, _, err := s.GetByKey("ns/b"); !errors.Is(err, ErrCorrupt) && tc.part != layout.PartIndex {
				t.Errorf("GetByKey(ns/b) = %v, want ErrCorrupt", err)
			}
		})
	}
}

// TestDamagedMetaDiscards checks that a damaged byte in a resource's meta
// or live pointer discards the resource on open, with the reason and a
// count in warmcache_store_corrupt_objects_total.
func TestDamagedMetaDiscards(t *testing.T) {
	for _, part := range []string{layout.PartMeta, layout.PartLive} {
		t.Run(part, func(t *testing.T) {
			ctx := context.Background()
			path := tempPath(t)
			db, err := Open(ctx, path, Options{Sync: UnsafeNoSync})
			must(t, err)
			s := openPods(t, db, namespaceIndexers())
			must(t, s.Replace([]interface{}{mkPod("ns", "a", "1")}, "1"))
			must(t, db.Close())
			rawUpdate(t, path, func(tx *bbolt.Tx) error {
				res := tx.Bucket([]byte(podsID.String()))
				key := map[string][]byte{layout.PartMeta: layout.MetaKey, layout.PartLive: layout.LiveKey}[part]
				v := slices.Clone(res.Get(key))
				v[len(v)/2] ^= 0x01
				return res.Put(key, v)
			})
			m := newTestMetrics()
			db = openDB(t, path, Options{Sync: UnsafeNoSync, Metrics: m})
			s = openPods(t, db, namespaceIndexers())
			if st := mustState(t, s); !strings.Contains(st.Discarded, part+" checksum mismatch") || st.Objects != 0 || st.RV != "" {
				t.Errorf("state = %+v, want discarded for the %s checksum", st, part)
			}
			if n, _ := m.corruptCount(podsID.String(), part); n != 1 {
				t.Errorf("corrupt records counted for part %q = %v, want 1", part, n)
			}
		})
	}
}

// TestChecksumsBindKeys checks that a record moved under another key fails
// its checksum: an item entry or envelope copied from another item, an
// index entry's checksum under another key.
func TestChecksumsBindKeys(t *testing.T) {
	env := layout.EncodeEnvelope("ns/a", "1", "uid", []byte("payload"))
	if err := layout.VerifyEnvelope([]byte("ns/a"), env); err != nil {
		t.Fatalf("VerifyEnvelope of its own key: %v", err)
	}
	if err := layout.VerifyEnvelope([]byte("ns/b"), env); !errors.Is(err, ErrChecksum) {
		t.Errorf("VerifyEnvelope of another key = %v, want ErrChecksum", err)
	}
	entry := layout.AppendItemEntry(nil, []byte("ns/a"), []byte{0, 0, 0, 0, 0, 0, 0, 1}, []byte{0xc0, 0x80}, nil, nil)
	if _, err := layout.ParseItemEntry([]byte("ns/a"), entry); err != nil {
		t.Fatalf("ParseItemEntry of its own key: %v", err)
	}
	if _, err := layout.ParseItemEntry([]byte("ns/b"), entry); !errors.Is(err, ErrChecksum) {
		t.Errorf("ParseItemEntry of another key = %v, want ErrChecksum", err)
	}
	x := layout.NewIndexSum("namespace")
	k := layout.IndexKey("ns", "ns/a")
	if err := x.Verify(k, x.Value(k, "ns")); err != nil {
		t.Fatalf("Verify of an index entry: %v", err)
	}
	if err := layout.NewIndexSum("other").Verify(k, x.Value(k, "ns")); !errors.Is(err, ErrChecksum) {
		t.Errorf("an entry of index namespace checked as one of index other = %v, want ErrChecksum", err)
	}
	if err := x.Verify(layout.IndexKey("ns", "ns/b"), x.Value(k, "ns")); !errors.Is(err, ErrChecksum) {
		t.Errorf("an entry's checksum under another key = %v, want ErrChecksum", err)
	}

	// A long value, held by its entry, is covered by the checksum.
	long := strings.Repeat("v", layout.MaxInlineIndexValue+1)
	lk := layout.IndexKey(long, "ns/a")
	lv := x.Value(lk, long)
	if err := x.Verify(lk, lv); err != nil {
		t.Fatalf("Verify of the entry of a long value: %v", err)
	}
	damaged := bytes.Clone(lv)
	damaged[len(damaged)-1] = 'w'
	if err := x.Verify(lk, damaged); !errors.Is(err, ErrChecksum) {
		t.Errorf("Verify of a long value's entry with a damaged value = %v, want ErrChecksum", err)
	}
	if err := x.Verify(lk, lv[:layout.SumLen-1]); !errors.Is(err, ErrChecksum) {
		t.Errorf("Verify of a truncated entry = %v, want ErrChecksum", err)
	}
}
