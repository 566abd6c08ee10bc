package parallel

import (
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
)

// entry is a chunk entry as the bolt store makes them: raw to decode into
// obj, or obj already there (a cache's object, raw nil).
type entry struct {
	key   string
	raw   []byte
	obj   string
	calls *atomic.Int32 // Decode calls on this entry
}

var errBad = errors.New("does not decode")

// entryDecoder decodes raw into obj and drops raw; "bad" does not decode.
type entryDecoder struct{}

func (entryDecoder) Decode(e *entry) error {
	e.calls.Add(1)
	if e.raw == nil {
		return nil
	}
	if string(e.raw) == "bad" {
		return fmt.Errorf("entry %s: %w", e.key, errBad)
	}
	e.obj, e.raw = "decoded "+string(e.raw), nil
	return nil
}

func (entryDecoder) Pending(e *entry) bool { return e.raw != nil }

// chunkEntries returns n entries: every third one already decoded, the one
// at bad (if in range) one that does not decode.
func chunkEntries(n, bad int) []entry {
	out := make([]entry, n)
	for i := range out {
		key := fmt.Sprintf("p%04d", i)
		switch {
		case i == bad:
			out[i] = entry{key: key, raw: []byte("bad")}
		case i%3 == 0:
			out[i] = entry{key: key, obj: "cached " + key}
		default:
			out[i] = entry{key: key, raw: []byte(key)}
		}
		out[i].calls = new(atomic.Int32)
	}
	return out
}

// badPositions returns -1 (none) and the entries of a chunk of n to decode
// (chunkEntries) at its start, middle and end, the places a failed decode
// can be put.
func badPositions(n int) []int {
	out := []int{-1}
	for _, b := range []int{1, n / 2, n - 1} {
		if b%3 == 0 {
			b-- // the cached entries never fail
		}
		if b > 0 && b < n && b != out[len(out)-1] {
			out = append(out, b)
		}
	}
	return out
}

const size = 256

// TestChunk checks that a chunk decoded while it is collected gives what
// ForEachN gives once it is collected: every entry in the order added,
// decoded once, the error of the entry that does not decode at its index,
// for chunks below the size that starts the workers, at it and full, on
// one worker and on several.
func TestChunk(t *testing.T) {
	withProcs(t, 4)
	for _, workers := range []int{1, 2, 4} {
		for _, n := range []int{1, Min - 1, Min, Min + 1, size} {
			for _, bad := range badPositions(n) {
				t.Run(fmt.Sprintf("workers=%d/n=%d/bad=%d", workers, n, bad), func(t *testing.T) {
					d := Chunk[entry, entryDecoder]{Size: size, Workers: workers}
					entries := chunkEntries(n, bad)
					for _, e := range entries {
						d.Add(e)
					}
					if d.Len() != n {
						t.Fatalf("Len = %d, want %d", d.Len(), n)
					}
					chunk, errs := d.Finish()
					d.Stop() // a second stop does nothing
					want := chunkEntries(n, bad)
					wantErrs := ForEachN(1, n, func(i int) error { return entryDecoder{}.Decode(&want[i]) })
					if len(chunk) != n {
						t.Fatalf("Finish returned %d entries, want %d", len(chunk), n)
					}
					for i := range chunk {
						if (errs != nil && errs[i] != nil) != (wantErrs != nil && wantErrs[i] != nil) {
							t.Fatalf("entry %d: errors %v, ForEachN's %v", i, errs, wantErrs)
						}
						if c := entries[i].calls.Load(); c != 1 {
							t.Errorf("entry %d decoded %d times, want once", i, c)
						}
						if i == bad {
							if !errors.Is(errs[i], errBad) {
								t.Errorf("entry %d: error %v, want errBad", i, errs[i])
							}
							continue
						}
						if chunk[i].key != want[i].key || chunk[i].obj != want[i].obj || chunk[i].raw != nil {
							t.Errorf("entry %d: %q %q (raw %q), want %q %q", i, chunk[i].key, chunk[i].obj, chunk[i].raw, want[i].key, want[i].obj)
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

// TestChunkStop checks that Stop, on a path that does not finish (a read
// that fails midway), returns only once the workers are done with the
// entries handed to them (wg.Wait: a worker's goroutine may still be
// exiting, but decodes nothing more): none may decode after the
// transaction ends.
func TestChunkStop(t *testing.T) {
	withProcs(t, 4)
	d := Chunk[entry, entryDecoder]{Size: size, Workers: 4}
	for _, e := range chunkEntries(size-1, -1) {
		d.Add(e)
	}
	d.Stop()
	for i := range d.chunk {
		if d.chunk[i].raw != nil || d.chunk[i].obj == "" {
			t.Fatalf("entry %d not decoded when Stop returned", i)
		}
	}
	if d.jobs == nil || !d.stopped {
		t.Fatal("the workers never ran: the test does not test Stop")
	}
	d.Stop() // a second stop does nothing
}
