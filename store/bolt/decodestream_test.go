package bolt

import (
	"errors"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/warmcache/warmcache/store/bolt/internal/layout"
	"github.com/warmcache/warmcache/store/bolt/internal/parallel"
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

// TestChunkDecoder checks that a chunk decoded while it is collected gives
// what decodeSelected gives once it is collected: every object in the
// order added, the keys' bytes dropped, the error of the entry that does
// not decode at its index, for chunks below the size that starts the
// workers, at it and full, on one worker and on several.
func TestChunkDecoder(t *testing.T) {
	s := openPods(t, openDB(t, tempPath(t), Options{Sync: UnsafeNoSync}), nil)
	for _, workers := range []int{1, 2, 4} {
		for _, n := range []int{1, parallel.Min - 1, parallel.Min, parallel.Min + 1, scanChunk} {
			for _, bad := range badPositions(n) {
				t.Run(fmt.Sprintf("workers=%d/n=%d/bad=%d", workers, n, bad), func(t *testing.T) {
					d := chunkDecoder{s: s, workers: workers}
					for _, e := range chunkEntries(t, n, bad) {
						d.add(e)
					}
					if d.len() != n {
						t.Fatalf("len = %d, want %d", d.len(), n)
					}
					chunk, errs := d.finish()
					d.stop() // a second stop does nothing
					want := chunkEntries(t, n, bad)
					wantErrs := s.decodeSelected(want, 1)
					if len(chunk) != n {
						t.Fatalf("finish returned %d entries, want %d", len(chunk), n)
					}
					for i := range chunk {
						name := fmt.Sprintf("p%04d", i)
						if (errs != nil && errs[i] != nil) != (wantErrs != nil && wantErrs[i] != nil) {
							t.Fatalf("entry %d: error %v, decodeSelected's %v", i, errs, wantErrs)
						}
						if i == bad {
							if !errors.Is(errs[i], ErrCorrupt) {
								t.Errorf("entry %d: error %v, want ErrCorrupt", i, errs[i])
							}
							if string(chunk[i].k) != "ns/"+name {
								t.Errorf("failed entry %d keeps key %q, want its key for the report", i, chunk[i].k)
							}
							continue
						}
						if p, ok := chunk[i].obj.(*corev1.Pod); !ok || p.Name != name {
							t.Errorf("entry %d: object %v, want pod %s", i, chunk[i].obj, name)
						}
						if chunk[i].k != nil || chunk[i].env != nil {
							t.Errorf("entry %d keeps the stored bytes (k %q, env %d bytes)", i, chunk[i].k, len(chunk[i].env))
						}
					}
					if bad < 0 && errs != nil {
						t.Errorf("errors %v for a chunk that decodes", errs)
					}
				})
			}
		}
	}
}

// badPositions returns -1 (none) and the decoded entries of a chunk of n
// (chunkEntries) at its start, middle and end, the places a failed decode
// can be put.
func badPositions(n int) []int {
	out := []int{-1}
	for _, b := range []int{1, n / 2, n - 1} {
		if b%3 == 0 {
			b-- // the tier's objects never fail
		}
		if b > 0 && b < n && b != out[len(out)-1] {
			out = append(out, b)
		}
	}
	return out
}

// TestChunkDecoderStop checks that stop, on a path that does not finish
// (a read that fails midway), returns only once the workers are done with
// the entries handed to them (wg.Wait: a worker's goroutine may still be
// exiting, but decodes nothing more): none may decode after the
// transaction ends.
func TestChunkDecoderStop(t *testing.T) {
	s := openPods(t, openDB(t, tempPath(t), Options{Sync: UnsafeNoSync}), nil)
	d := chunkDecoder{s: s, workers: 4}
	entries := chunkEntries(t, scanChunk-1, -1)
	for _, e := range entries {
		d.add(e)
	}
	d.stop()
	for i := range d.chunk {
		if d.chunk[i].env != nil || d.chunk[i].obj == nil {
			t.Fatalf("entry %d not decoded when stop returned", i)
		}
	}
	if d.jobs == nil || !d.stopped {
		t.Fatal("the workers never ran: the test does not test stop")
	}
	d.stop() // a second stop does nothing
}
