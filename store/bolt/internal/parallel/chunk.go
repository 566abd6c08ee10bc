package parallel

import (
	"runtime"
	"sync"
)

// Decoder decodes the entries of a Chunk in place.
type Decoder[E any] interface {
	// Decode decodes e in place. It is called concurrently for distinct
	// entries, once per entry.
	Decode(e *E) error
	// Pending reports whether e has something to decode; an entry that
	// has not (an object a cache gave) is completed by Decode on the
	// collecting goroutine, not handed to a worker.
	Pending(e *E) bool
}

// Chunk collects a chunk of a read (at most Size entries) and decodes it
// like ForEachN, but overlapping the decode with the collection: once the
// chunk holds Min entries, workers decode each entry as soon as it is
// added, while the collecting goroutine walks its cursor on to the next
// ones, and that goroutine joins them in Finish. A whole-store read spends
// about a tenth of its time walking cursors and reading envelopes; decoded
// only once collected, a chunk left the other cores idle for that part.
//
// Set Decoder, Size and Workers (the decoding goroutines besides the
// collecting one; 0: GOMAXPROCS) before the first Add. The entries may
// alias a read transaction, which must stay open until Finish or Stop
// returns. A Chunk is used by one goroutine (the collector), for one chunk,
// and is not copied once used.
type Chunk[E any, D Decoder[E]] struct {
	Decoder D
	Size    int
	Workers int

	chunk []E
	// Set once the workers run: base is chunk at its final capacity (the
	// workers' view of it: appends never move it), jobs the indexes of
	// the entries to decode.
	base    []E
	jobs    chan int
	stopped bool
	wg      sync.WaitGroup
	mu      sync.Mutex // guards errs
	errs    []error
}

// Len returns the number of entries added.
func (d *Chunk[E, D]) Len() int { return len(d.chunk) }

// Add appends e, at most Size entries in all, and hands it to the workers
// if they run. The entry is decoded in its place in the chunk: taking the
// address of e would move every entry to the heap.
func (d *Chunk[E, D]) Add(e E) {
	d.chunk = append(d.chunk, e)
	i := len(d.chunk) - 1
	switch {
	case d.jobs == nil:
		if len(d.chunk) == Min {
			d.start()
		}
	case !d.Decoder.Pending(&d.chunk[i]):
		_ = d.Decoder.Decode(&d.chunk[i]) // nothing to decode; no worker has it
	default:
		d.jobs <- i
	}
}

// start moves the chunk to an array of its final capacity and starts the
// workers on the entries added so far.
func (d *Chunk[E, D]) start() {
	workers := d.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	if workers <= 1 {
		return // decoded in Finish, on the collector's goroutine
	}
	d.base = make([]E, d.Size)
	d.chunk = d.base[:copy(d.base, d.chunk)]
	d.jobs = make(chan int, d.Size)
	for i := range d.chunk {
		if d.Decoder.Pending(&d.chunk[i]) {
			d.jobs <- i
		} else {
			_ = d.Decoder.Decode(&d.chunk[i])
		}
	}
	for range workers {
		d.wg.Go(d.work)
	}
}

// work decodes the entries whose indexes it receives, until jobs is
// closed.
func (d *Chunk[E, D]) work() {
	for i := range d.jobs {
		if err := d.Decoder.Decode(&d.base[i]); err != nil {
			d.mu.Lock()
			if d.errs == nil {
				d.errs = make([]error, d.Size)
			}
			d.errs[i] = err
			d.mu.Unlock()
		}
	}
}

// Finish decodes what is left of the chunk, with the collector's goroutine
// helping, and returns the chunk and the errors of the entries that did not
// decode, indexed like the chunk (nil if all decoded), as ForEachN returns
// them.
func (d *Chunk[E, D]) Finish() ([]E, []error) {
	if d.jobs == nil {
		workers := d.Workers
		if workers <= 0 {
			workers = runtime.GOMAXPROCS(0)
		}
		return d.chunk, ForEachN(workers, len(d.chunk), func(i int) error {
			return d.Decoder.Decode(&d.chunk[i])
		})
	}
	d.Stop()
	if d.errs != nil {
		d.errs = d.errs[:len(d.chunk)]
	}
	return d.chunk, d.errs
}

// Stop ends the workers, once the entries handed to them are decoded, with
// the collector's goroutine helping. It must be called before the read
// transaction the entries alias ends, on every path (Finish calls it);
// calls after the first do nothing.
func (d *Chunk[E, D]) Stop() {
	if d.jobs == nil || d.stopped {
		return
	}
	d.stopped = true
	close(d.jobs)
	d.work()
	d.wg.Wait()
}
