package printers

import (
	"iter"
	"runtime"
	"sync"
	"sync/atomic"

	k8sruntime "k8s.io/apimachinery/pkg/runtime"
)

// renderBatch is the number of objects a worker renders at a time.
const renderBatch = 64

// rendered is the output of one object: its bytes in a batch's buffer and
// a flag the renderer sets (a YAML List item's needBreak).
type rendered struct {
	end  int
	flag bool
}

// batch is objects rendered together by one worker, then written in order.
type batch struct {
	objs  []k8sruntime.Object
	out   []byte
	items []rendered
	err   error
	done  chan struct{}
}

// renderFunc appends the rendering of obj to dst, with o's buffers.
type renderFunc func(o *objectDoc, obj k8sruntime.Object, dst []byte) ([]byte, bool, error)

// renderOrdered renders the objects objs yields with render on
// GOMAXPROCS workers, a batch of renderBatch objects at a time, and
// passes each object's bytes to write in the order objs yields them, on
// the calling goroutine. At most 2×workers batches are in flight, so
// memory stays proportional to them, not to the objects. It stops at the
// first error of objs, render or write, and returns it; bytes rendered
// after it are dropped.
func renderOrdered(objs iter.Seq2[k8sruntime.Object, error], render renderFunc, write func(b []byte, flag bool) error) error {
	workers := runtime.GOMAXPROCS(0)
	if workers < 2 {
		return renderSequential(objs, render, write)
	}
	jobs := make(chan *batch, workers)
	// pending holds the batches in order; its capacity bounds what is in
	// flight.
	pending := make(chan *batch, 2*workers)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			o := newObjectDoc()
			for b := range jobs {
				b.render(o, render)
			}
		})
	}
	free := sync.Pool{New: func() any { return &batch{} }}
	newBatch := func() *batch {
		b := free.Get().(*batch)
		b.objs, b.out, b.items, b.err = b.objs[:0], b.out[:0], b.items[:0], nil
		b.done = make(chan struct{})
		return b
	}
	// The writer drains pending on the calling goroutine's behalf: it
	// runs as its own goroutine so that objs keeps being read while it
	// writes, and reports its first error in werr.
	var werr error
	var failed atomic.Bool
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		for b := range pending {
			<-b.done
			if werr == nil {
				werr = b.err
				start := 0
				for _, it := range b.items {
					if werr != nil {
						break
					}
					werr = write(b.out[start:it.end], it.flag)
					start = it.end
				}
				if werr != nil {
					failed.Store(true)
				}
			}
			// A pooled batch must not keep its objects reachable: the
			// pool holds it for up to two collections.
			clear(b.objs)
			free.Put(b)
		}
	}()
	var yerr error
	cur := newBatch()
	flush := func() {
		pending <- cur
		jobs <- cur
		cur = newBatch()
	}
	for obj, err := range objs {
		if err != nil {
			yerr = err
			break
		}
		cur.objs = append(cur.objs, obj)
		if len(cur.objs) == renderBatch {
			flush()
			if failed.Load() {
				break
			}
		}
	}
	if len(cur.objs) > 0 && !failed.Load() {
		flush()
	}
	close(jobs)
	close(pending)
	<-writerDone
	wg.Wait()
	if yerr != nil {
		// Written what came before the error, as the sequential printers
		// do.
		return yerr
	}
	return werr
}

// render renders the batch's objects with o.
func (b *batch) render(o *objectDoc, render renderFunc) {
	defer close(b.done)
	for _, obj := range b.objs {
		var flag bool
		var err error
		if b.out, flag, err = render(o, obj, b.out); err != nil {
			b.err = err
			return
		}
		b.items = append(b.items, rendered{end: len(b.out), flag: flag})
	}
	clear(b.objs) // the objects are not held past their rendering
}

// renderSequential is renderOrdered on the calling goroutine.
func renderSequential(objs iter.Seq2[k8sruntime.Object, error], render renderFunc, write func(b []byte, flag bool) error) error {
	o := newObjectDoc()
	var out []byte
	for obj, err := range objs {
		if err != nil {
			return err
		}
		var flag bool
		if out, flag, err = render(o, obj, out[:0]); err != nil {
			return err
		}
		if err := write(out, flag); err != nil {
			return err
		}
	}
	return nil
}
