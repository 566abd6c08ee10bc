package filecheck

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	bbolt "go.etcd.io/bbolt"
)

// buildLargeFile writes a bbolt file of about size bytes shaped like a
// warmcache file: objects of ~3 KiB under namespace/name keys, and an index
// bucket of small composite keys.
func buildLargeFile(b *testing.B, size int) string {
	b.Helper()
	path := filepath.Join(b.TempDir(), "large.db")
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(5, 6))
	const perTx = 2000
	objects := size / (4 << 10) // ~3 KiB value in a half-filled page on average
	for done := 0; done < objects; done += perTx {
		err := db.Update(func(tx *bbolt.Tx) error {
			items, err := tx.CreateBucketIfNotExists([]byte("items"))
			if err != nil {
				return err
			}
			index, err := tx.CreateBucketIfNotExists([]byte("index"))
			if err != nil {
				return err
			}
			for i := done; i < done+perTx && i < objects; i++ {
				key := fmt.Appendf(nil, "ns-%03d/pod-%08d", rng.IntN(500), rng.Uint32())
				// bbolt keeps the slices until commit: a fresh one per Put.
				val := make([]byte, 2<<10+rng.IntN(2<<10))
				for j := range val {
					val[j] = byte(rng.IntN(64))
				}
				if err := items.Put(key, val); err != nil {
					return err
				}
				if err := index.Put(append([]byte("node-17\x00"), key...), nil); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		b.Fatal(err)
	}
	return path
}

// BenchmarkCheck measures Check on a ~200 MB file, shallow and deep,
// with the file in the page cache and (on Linux) evicted from it first.
func BenchmarkCheck(b *testing.B) {
	path := buildLargeFile(b, 200<<20)
	fi, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	for _, bc := range []struct {
		name string
		opts Options
		cold bool
	}{
		{"shallow", Options{SkipTreeWalk: true}, false},
		{"deep", Options{}, false},
		{"shallow-cold", Options{SkipTreeWalk: true}, true},
		{"deep-cold", Options{}, true},
	} {
		b.Run(bc.name, func(b *testing.B) {
			if bc.cold && !canEvict {
				b.Skip("evicting a file from the page cache is only implemented on Linux")
			}
			b.SetBytes(fi.Size())
			for b.Loop() {
				if bc.cold {
					b.StopTimer()
					evict(b, path)
					b.StartTimer()
				}
				if err := Check(ctx, path, bc.opts); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
