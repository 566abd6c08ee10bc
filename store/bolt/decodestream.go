package bolt

import (
	"runtime"
	"sync"

	"github.com/warmcache/warmcache/store/bolt/internal/parallel"
)

// chunkDecoder collects a chunk of a read (at most scanChunk entries) and
// decodes it like decodeSelected, but overlapping the decode with the
// collection: once the chunk holds parallel.Min entries, workers decode
// each entry as soon as it is added, while the reading goroutine walks
// the cursor on to the next ones, and that goroutine joins them in finish.
// A whole-store read spends about a tenth of its time walking cursors and
// reading envelopes; decoded only once collected, a chunk left the other
// cores idle for that part.
//
// The entries alias the read transaction, which must stay open until
// finish returns. A chunkDecoder is used by one goroutine (the reader's),
// for one chunk.
type chunkDecoder struct {
	s       *Store
	workers int // decoding goroutines besides the reader's; 0: GOMAXPROCS
	chunk   []selected
	// Set once the workers run: base is chunk at its final capacity (the
	// workers' view of it: appends never move it), jobs the indexes of
	// the entries to decode.
	base    []selected
	jobs    chan int
	stopped bool
	wg      sync.WaitGroup
	mu      sync.Mutex // guards errs
	errs    []error
}

// len returns the number of entries added.
func (d *chunkDecoder) len() int { return len(d.chunk) }

// add appends e, which selectedOf or selectedToFill made, and hands it to
// the workers if they run.
func (d *chunkDecoder) add(e selected) {
	if d.jobs == nil {
		d.chunk = append(d.chunk, e)
		if len(d.chunk) == parallel.Min {
			d.start()
		}
		return
	}
	if e.env == nil {
		_ = d.s.decodeEntry(&e) // a hot tier's object: nothing to decode
		d.chunk = append(d.chunk, e)
		return
	}
	d.chunk = append(d.chunk, e)
	d.jobs <- len(d.chunk) - 1
}

// start moves the chunk to an array of its final capacity and starts the
// workers on the entries added so far.
func (d *chunkDecoder) start() {
	workers := d.workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	if workers <= 1 {
		return // decoded in finish, on the reader's goroutine
	}
	d.base = make([]selected, scanChunk)
	d.chunk = d.base[:copy(d.base, d.chunk)]
	d.jobs = make(chan int, scanChunk)
	for i := range d.chunk {
		if d.chunk[i].env != nil {
			d.jobs <- i
		} else {
			_ = d.s.decodeEntry(&d.chunk[i])
		}
	}
	for range workers {
		d.wg.Go(d.work)
	}
}

// work decodes the entries whose indexes it receives, until jobs is
// closed.
func (d *chunkDecoder) work() {
	for i := range d.jobs {
		if err := d.s.decodeEntry(&d.base[i]); err != nil {
			d.mu.Lock()
			if d.errs == nil {
				d.errs = make([]error, scanChunk)
			}
			d.errs[i] = err
			d.mu.Unlock()
		}
	}
}

// finish decodes what is left of the chunk, with the reader's goroutine
// helping, and returns the chunk and its errors as decodeSelected does.
func (d *chunkDecoder) finish() ([]selected, []error) {
	if d.jobs == nil {
		return d.chunk, d.s.decodeSelected(d.chunk, d.workers)
	}
	d.stop()
	if d.errs != nil {
		d.errs = d.errs[:len(d.chunk)]
	}
	return d.chunk, d.errs
}

// stop ends the workers, once the entries handed to them are decoded, with
// the reader's goroutine helping. It must be called before the read
// transaction ends, on every path (finish calls it); calls after the first
// do nothing.
func (d *chunkDecoder) stop() {
	if d.jobs == nil || d.stopped {
		return
	}
	d.stopped = true
	close(d.jobs)
	d.work()
	d.wg.Wait()
}
