package changes

import (
	"fmt"
	"path/filepath"
	"slices"
	"testing"

	bbolt "go.etcd.io/bbolt"

	"github.com/warmcache/warmcache/store/bolt/internal/layout"
)

// generations writes old and live (key to resourceVersion) as generations
// 1 and 2 of a resource and calls fn with them in a read transaction.
func generations(t *testing.T, old, live map[string]string, fn func(old, live *layout.Generation)) {
	t.Helper()
	db, err := bbolt.Open(filepath.Join(t.TempDir(), "changes.db"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = db.Close() }()
	err = db.Update(func(tx *bbolt.Tx) error {
		res, err := tx.CreateBucket([]byte("pods"))
		if err != nil {
			return err
		}
		for gen, items := range []map[string]string{old, live} {
			g, err := layout.CreateGeneration(res, uint64(gen+1), nil)
			if err != nil {
				return err
			}
			w := layout.Writer{G: g}
			for key, rv := range items {
				env := layout.EncodeEnvelope(key, rv, "", []byte("payload of "+key+" at "+rv))
				if _, err := w.Put(key, env, layout.AppendSelectPart(nil, key, nil), nil); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	err = db.View(func(tx *bbolt.Tx) error {
		res := tx.Bucket([]byte("pods"))
		o, err := layout.OpenGeneration(res, 1)
		if err != nil {
			return err
		}
		l, err := layout.OpenGeneration(res, 2)
		if err != nil {
			return err
		}
		fn(o, l)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// recorder records what a Walk tells it, as "key old-rv>live-rv" ("-" for
// none).
type recorder struct {
	t       *testing.T
	changes []string
}

func (r *recorder) rv(env []byte) string {
	if env == nil {
		return "-"
	}
	rv, err := layout.EnvelopeRV(env)
	if err != nil {
		r.t.Fatalf("envelope told: %v", err)
	}
	return rv
}

func (r *recorder) Change(k, oenv, lenv []byte) {
	r.changes = append(r.changes, fmt.Sprintf("%s %s>%s", k, r.rv(oenv), r.rv(lenv)))
}

func (r *recorder) Unreadable(k []byte, err error) {
	r.t.Errorf("replaced object %q unreadable: %v", k, err)
}

// TestWalk checks that a walk tells, in key order, the keys vanished,
// added and updated (resourceVersions differ), and not those unchanged,
// and that resumed after the last key handled, with any bounds, it tells
// the same.
func TestWalk(t *testing.T) {
	old := map[string]string{"": "1", "ns/a": "1", "ns/b": "1", "ns/c": "1", "ns/e": "1", "ns/g": "3"}
	live := map[string]string{"": "1", "ns/b": "1", "ns/c": "2", "ns/d": "1", "ns/e": "1", "ns/f": "1", "ns/g": "3"}
	want := []string{"ns/a 1>-", "ns/c 1>2", "ns/d ->1", "ns/f ->1"}
	generations(t, old, live, func(o, l *layout.Generation) {
		for _, bounds := range [][2]int{{100, 100}, {2, 100}, {3, 100}, {100, 2}, {2, 2}, {3, 3}} {
			t.Run(fmt.Sprintf("changes=%d/entries=%d", bounds[0], bounds[1]), func(t *testing.T) {
				r := &recorder{t: t}
				var after []byte
				for calls := 1; ; calls++ {
					if calls > len(old)+len(live) {
						t.Fatalf("no end after %d walks: %q", calls, r.changes)
					}
					told := len(r.changes)
					last, done, bad := Walk(o, l, after, bounds[0], bounds[1], r)
					if bad != nil {
						t.Fatalf("live object %q unreadable: %v", bad.Key, bad.Err)
					}
					if len(r.changes)-told > bounds[0] {
						t.Fatalf("one walk told %d changes, bound %d", len(r.changes)-told, bounds[0])
					}
					if done {
						break
					}
					after = last
				}
				if !slices.Equal(r.changes, want) {
					t.Errorf("changes %q, want %q", r.changes, want)
				}
			})
		}
	})
}
