package e2e

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	bbolt "go.etcd.io/bbolt"
)

// TestCorruptOrForeignCacheFile: a cache file that is not a readable
// warmcache file is moved aside (kept, byte for byte, for inspection) with
// a log line naming both paths; the controller starts cold on a new file and
// runs (invariant 5).
func TestCorruptOrForeignCacheFile(t *testing.T) {
	t.Parallel()
	ctx := needEnv(t)
	c, ns := sharedCluster(ctx, t, "corrupt")
	const pods = 200
	c.createPods(ctx, t, ns, 0, pods)

	// A sound file, written by a first run, to truncate.
	sound := filepath.Join(t.TempDir(), "sound.db")
	first := startChild(t, childOptions{kubeconfig: c.kubeconfig, cacheFile: sound, namespace: ns})
	first.waitSynced(ctx)
	first.stop()
	soundBytes, err := os.ReadFile(sound)
	if err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name string
		// write writes the bad file at path.
		write func(t *testing.T, path string)
	}{
		{"garbage", func(t *testing.T, path string) {
			b := make([]byte, 64<<10)
			r := rand.NewChaCha8([32]byte{1})
			_, _ = r.Read(b)
			writeFile(t, path, b)
		}},
		{"truncated warmcache file", func(t *testing.T, path string) {
			writeFile(t, path, soundBytes[:len(soundBytes)/2])
		}},
		{"warmcache file with its first page zeroed", func(t *testing.T, path string) {
			b := bytes.Clone(soundBytes)
			// The page size the first meta page records after its
			// 16-byte page header (magic, version, page size).
			clear(b[:binary.LittleEndian.Uint32(b[24:28])])
			writeFile(t, path, b)
		}},
		{"foreign bbolt file", func(t *testing.T, path string) {
			db, err := bbolt.Open(path, 0o600, nil)
			if err != nil {
				t.Fatal(err)
			}
			err = db.Update(func(tx *bbolt.Tx) error {
				b, err := tx.CreateBucket([]byte("someone-else"))
				if err != nil {
					return err
				}
				return b.Put([]byte("k"), []byte("v"))
			})
			if cerr := db.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			file := filepath.Join(dir, "cache.db")
			tc.write(t, file)
			bad, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}

			ch := startChild(t, childOptions{kubeconfig: c.kubeconfig, cacheFile: file, namespace: ns})
			synced := ch.waitSynced(ctx)
			st, events := ch.stop()
			if synced.WarmStart || st.WarmStart {
				t.Error("started warm from a bad file")
			}
			initial, rest, err := split(events)
			if err != nil {
				t.Fatal(err)
			}
			want := c.listPods(ctx, t, ns)
			if d := initial.diff(want); d != "" || len(rest) != 0 {
				t.Errorf("not a cold start: initial adds differ from a LIST (%s), %d other events", d, len(rest))
			}

			moved, err := filepath.Glob(file + ".corrupt-*")
			if err != nil || len(moved) != 1 {
				t.Fatalf("moved-aside files %q (%v), want one", moved, err)
			}
			kept, err := os.ReadFile(moved[0])
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(kept, bad) {
				t.Errorf("the moved-aside file differs from the bad file (%d vs %d bytes)", len(kept), len(bad))
			}
			if log := ch.log(); !strings.Contains(log, moved[0]) || !strings.Contains(log, "moved it aside") {
				t.Errorf("no log line says the file was moved aside to %s; log:\n%s", moved[0], tail(ch.logFile, 2048))
			}
			got := readCache(ctx, t, file, podsIdentity(ns))
			if d := got.items.diff(want); d != "" {
				t.Errorf("the new cache file differs from a LIST: %s", d)
			}
		})
	}
}

func writeFile(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}
