package bolt

import (
	"errors"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/warmcache/warmcache/store/bolt/internal/layout"
)

// chunkEntries returns n chunk entries as selectedOf makes them: every
// third one an object the hot tier gave (no envelope), the one at bad (if
// in range) an envelope that does not decode, the others pods' envelopes.
func chunkEntries(t *testing.T, n, bad int) []selected {
	t.Helper()
	out := make([]selected, n)
	for i := range out {
		key := fmt.Sprintf("ns/p%04d", i)
		switch {
		case i == bad:
			out[i] = selected{k: []byte(key), env: layout.EncodeEnvelope(key, "1", "", []byte("not protobuf"))}
		case i%3 == 0:
			out[i] = selected{k: []byte(key), obj: mkPod("ns", fmt.Sprintf("p%04d", i), "1")}
		default:
			payload, err := podCodec.Encode(nil, mkPod("ns", fmt.Sprintf("p%04d", i), "1"))
			must(t, err)
			out[i] = selected{k: []byte(key), env: layout.EncodeEnvelope(key, "1", "", payload)}
		}
	}
	return out
}

// TestChunkDecoder checks the store's chunk decoder (parallel.Chunk, whose
// own tests check the overlap) on a full chunk, on one worker and on
// several: every pod decoded in the order added, the stored bytes dropped,
// and the entry that does not decode failing with ErrCorrupt and keeping
// its key for the report.
func TestChunkDecoder(t *testing.T) {
	s := openPods(t, openDB(t, tempPath(t), Options{Sync: UnsafeNoSync}), nil)
	const bad = scanChunk / 2
	for _, workers := range []int{1, 4} {
		t.Run(fmt.Sprintf("workers=%d", workers), func(t *testing.T) {
			d := newChunkDecoder(s, workers)
			for _, e := range chunkEntries(t, scanChunk, bad) {
				d.Add(e)
			}
			chunk, errs := d.Finish()
			if len(chunk) != scanChunk {
				t.Fatalf("Finish returned %d entries, want %d", len(chunk), scanChunk)
			}
			for i := range chunk {
				name := fmt.Sprintf("p%04d", i)
				if i == bad {
					if errs == nil || !errors.Is(errs[i], ErrCorrupt) {
						t.Errorf("entry %d: errors %v, want ErrCorrupt at %d", i, errs, i)
					}
					if string(chunk[i].k) != "ns/"+name {
						t.Errorf("failed entry %d keeps key %q, want its key for the report", i, chunk[i].k)
					}
					continue
				}
				if errs != nil && errs[i] != nil {
					t.Errorf("entry %d: error %v", i, errs[i])
				}
				if p, ok := chunk[i].obj.(*corev1.Pod); !ok || p.Name != name {
					t.Errorf("entry %d: object %v, want pod %s", i, chunk[i].obj, name)
				}
				if chunk[i].k != nil || chunk[i].env != nil {
					t.Errorf("entry %d keeps the stored bytes (k %q, env %d bytes)", i, chunk[i].k, len(chunk[i].env))
				}
			}
		})
	}
}
