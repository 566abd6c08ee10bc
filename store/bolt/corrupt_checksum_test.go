package bolt

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	bbolt "go.etcd.io/bbolt"
	"k8s.io/client-go/tools/cache"

	"github.com/warmcache/warmcache/internal/podgen"
	"github.com/warmcache/warmcache/store/bolt/internal/layout"
)

// The corrupt-file suite's checksum variants: bytes damaged inside values
// and keys that bbolt reads as valid (it checksums its meta pages only),
// the way a bad sector or a stray write (dd conv=notrunc) damages them.
// Each record is found by searching the raw file for its bytes (a key and
// its value are contiguous in a bbolt leaf); every copy is damaged, the
// stale ones on free pages included, which nothing reads.

// checksumVariants returns variants of base with a damaged payload, item
// entry, item key, index entry, meta and live pointer.
func checksumVariants(t *testing.T, base []byte) []corruptVariant {
	t.Helper()
	raw := readRawRecords(t, base)
	var vs []corruptVariant
	add := func(name, part, key string, needle []byte, off int, with []byte) {
		data, n := overwriteAll(base, needle, off, with)
		if n == 0 {
			t.Fatalf("checksum variant %q: %q is not in the base file", name, needle)
		}
		vs = append(vs, corruptVariant{Name: "checksum: " + name, Expect: corruptExpectDetected, Part: part, Key: key, data: data})
	}
	flip := func(b byte) []byte { return []byte{b ^ 0x01} }

	// The case: 8 bytes of a pod's containerID overwritten.
	pod := podgen.Pod(6)
	cid := []byte(pod.Status.ContainerStatuses[0].ContainerID)
	add("8 bytes of a payload", layout.PartEnvelope, podKey(6), cid, 20, []byte("deadbeef"))

	k := podKey(7)
	entry := append([]byte(k), raw.items[k]...)
	add("a byte of an item entry", layout.PartItem, k, entry, len(k)+len(raw.items[k])/2, flip(entry[len(k)+len(raw.items[k])/2]))
	k = podKey(9)
	add("a byte of an item's key", layout.PartItem, flipLast(k), append([]byte(k), raw.items[k]...), len(k)-1, flip(k[len(k)-1]))

	k = podKey(10)
	ik := layout.IndexKey(podgen.Pod(10).Namespace, k)
	ie := append(slices.Clone(ik), raw.index[string(ik)]...)
	add("a byte of an index entry's key", layout.PartIndex, flipLast(k), ie, len(ik)-1, flip(ik[len(ik)-1]))
	add("a byte of an index entry's checksum", layout.PartIndex, k, ie, len(ik)+1, flip(ie[len(ik)+1]))

	meta := append(slices.Clone(layout.MetaKey), raw.meta...)
	mid := len(layout.MetaKey) + len(raw.meta)/2
	add("a byte of the resource's meta", layout.PartMeta, "", meta, mid, flip(meta[mid]))
	live := append(slices.Clone(layout.LiveKey), raw.live...)
	last := len(layout.LiveKey) + 7 // the low byte of the generation number
	add("a byte of the live pointer", layout.PartLive, "", live, last, flip(live[last]))
	return vs
}

// podKey is the object key of podgen.Pod(i).
func podKey(i int) string {
	p := podgen.Pod(i)
	return p.Namespace + "/" + p.Name
}

// flipLast returns key with the low bit of its last byte flipped.
func flipLast(key string) string {
	return key[:len(key)-1] + string([]byte{key[len(key)-1] ^ 0x01})
}

// rawRecords are the stored values of the corrupt base file's pods
// resource that the variants damage.
type rawRecords struct {
	items map[string][]byte // object key -> item entry
	index map[string][]byte // namespace index key -> value
	meta  []byte
	live  []byte
}

func readRawRecords(t *testing.T, data []byte) rawRecords {
	t.Helper()
	path := filepath.Join(uncheckedDir(t), "records.db")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = db.Close() }()
	r := rawRecords{items: map[string][]byte{}, index: map[string][]byte{}}
	err = db.View(func(tx *bbolt.Tx) error {
		res := tx.Bucket([]byte(corruptPodsID.String()))
		if res == nil {
			return errors.New("no pods resource")
		}
		r.meta, r.live = slices.Clone(res.Get(layout.MetaKey)), slices.Clone(res.Get(layout.LiveKey))
		g, err := layout.OpenLive(res)
		if err != nil {
			return err
		}
		c := g.Items.Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			r.items[string(k)] = slices.Clone(v)
		}
		return g.Index.Bucket([]byte(cache.NamespaceIndex)).ForEach(func(k, v []byte) error {
			r.index[string(k)] = slices.Clone(v)
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// overwriteAll returns a copy of data in which every occurrence of needle
// has the bytes at off overwritten with with, and the number of
// occurrences.
func overwriteAll(data, needle []byte, off int, with []byte) ([]byte, int) {
	out := slices.Clone(data)
	n := 0
	for i := 0; ; {
		j := bytes.Index(out[i:], needle)
		if j < 0 {
			return out, n
		}
		copy(out[i+j+off:], with)
		n++
		i += j + len(needle)
	}
}

// checkDetected checks a corruptExpectDetected variant on its open db: a
// damaged meta or live pointer discards the resource on open with the
// reason logged; any other damaged record is named by Verify, and skipped
// and reported (OnCorruption, with an error matching ErrChecksum and
// naming the key) by the read that meets it.
func checkDetected(ctx context.Context, v corruptVariant, db *DB) error {
	var problems []Problem
	if err := verifyDB(ctx, db, nil, func(p Problem) { problems = append(problems, p) }); err != nil {
		return fmt.Errorf("Verify: %w", err)
	}
	var reported []error
	opts := corruptResourceOptions()
	opts.OnCorruption = func(err error) { reported = append(reported, err) }
	s, err := db.Resource(ctx, opts)
	if err != nil {
		return fmt.Errorf("Resource: %w", err)
	}
	st, err := s.State()
	if err != nil {
		return fmt.Errorf("State: %w", err)
	}
	switch v.Part {
	case layout.PartMeta, layout.PartLive:
		kind := map[string]ProblemKind{layout.PartMeta: ProblemMeta, layout.PartLive: ProblemLayout}[v.Part]
		if !slices.ContainsFunc(problems, func(p Problem) bool {
			return p.Kind == kind && strings.Contains(p.Detail, v.Part+" checksum mismatch")
		}) {
			return fmt.Errorf("Verify reported %v, want a %s problem naming the %s checksum", problems, kind, v.Part)
		}
		if !strings.Contains(st.Discarded, v.Part+" checksum mismatch") || st.Objects != 0 {
			return fmt.Errorf("state %+v, want the resource discarded for its %s checksum", st, v.Part)
		}
		return nil
	}
	if !slices.ContainsFunc(problems, func(p Problem) bool { return p.Kind == ProblemChecksum && p.Key == v.Key }) {
		return fmt.Errorf("Verify reported %v, want a %s problem for %q", problems, ProblemChecksum, v.Key)
	}
	if st.Discarded != "" {
		return fmt.Errorf("the resource was discarded on open (%s); the damage is in one record", st.Discarded)
	}
	if v.Part == layout.PartIndex {
		if _, err := s.ByIndex(cache.NamespaceIndex, strings.SplitN(v.Key, "/", 2)[0]); err != nil {
			return fmt.Errorf("ByIndex: %w", err)
		}
	} else {
		for _, obj := range s.List() {
			if key, _ := s.key(obj); key == v.Key || flipLast(key) == v.Key {
				return fmt.Errorf("List returned the damaged object %q", key)
			}
		}
	}
	if len(reported) == 0 || !errors.Is(reported[0], ErrChecksum) || !strings.Contains(reported[0].Error(), v.Key) {
		return fmt.Errorf("OnCorruption got %v, want an ErrChecksum naming %q", reported, v.Key)
	}
	return nil
}
