package genserver

import (
	"bytes"
	"context"
	"io"
	"runtime"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// state is object idx of a resource at resourceVersion rv and generation
// gen: what one event serves.
type state struct {
	idx int32
	rv  int64
	gen uint32
}

// eventEncoder encodes watch events into reused buffers; one per
// goroutine.
type eventEncoder struct {
	c          codec
	obj, event bytes.Buffer
}

func newEventEncoder(c codec) *eventEncoder { return &eventEncoder{c: c} }

// encode returns the event's encoding, valid until the next call.
func (e *eventEncoder) encode(typ watch.EventType, obj kruntime.Object, objEnc kruntime.Encoder) ([]byte, error) {
	e.obj.Reset()
	if err := objEnc.Encode(obj, &e.obj); err != nil {
		return nil, err
	}
	e.event.Reset()
	ev := &metav1.WatchEvent{Type: string(typ), Object: kruntime.RawExtension{Raw: e.obj.Bytes()}}
	if err := e.c.event.Encode(ev, &e.event); err != nil {
		return nil, err
	}
	return e.event.Bytes(), nil
}

// encodeChunk is the number of events one goroutine encodes at a time.
const encodeChunk = 128

// encodeOrdered writes n events of type typ to w, framed, the k-th of
// object at(k) of res: encoded by one goroutine per core a chunk at a
// time and written in order. At most two chunks per core are in flight.
// at is called from those goroutines and must be safe for concurrent use.
func encodeOrdered(ctx context.Context, w io.Writer, c codec, res *resource, typ watch.EventType, n int, at func(k int) state) error {
	type chunk struct {
		lo, hi int
		buf    bytes.Buffer
		err    error
		done   chan struct{}
	}
	workers := min(runtime.GOMAXPROCS(0), (n+encodeChunk-1)/encodeChunk)
	if workers == 0 {
		return nil
	}
	jobs := make(chan *chunk, 2*workers)
	ordered := make(chan *chunk, 2*workers)
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		defer close(ordered)
		defer close(jobs)
		for lo := 0; lo < n; lo += encodeChunk {
			ch := &chunk{lo: lo, hi: min(lo+encodeChunk, n), done: make(chan struct{})}
			select {
			case ordered <- ch:
			case <-stop:
				return
			}
			select {
			case jobs <- ch:
			case <-stop:
				return
			}
		}
	}()
	for range workers {
		go func() {
			enc := newEventEncoder(c)
			for ch := range jobs {
				// The frame writer of a buffer writes each event's
				// length and bytes; one per chunk, not per event.
				fw := c.info.StreamSerializer.Framer.NewFrameWriter(&ch.buf)
				for k := ch.lo; k < ch.hi; k++ {
					st := at(k)
					obj, err := res.object(st.idx, st.rv, st.gen)
					if err == nil {
						var b []byte
						b, err = enc.encode(typ, obj, c.object)
						if err == nil {
							_, err = fw.Write(b)
						}
					}
					if err != nil {
						ch.err = err
						break
					}
				}
				close(ch.done)
			}
		}()
	}
	for ch := range ordered {
		select {
		case <-ch.done:
		case <-ctx.Done():
			return ctx.Err()
		}
		if ch.err != nil {
			return ch.err
		}
		if _, err := w.Write(ch.buf.Bytes()); err != nil {
			return err
		}
	}
	return nil
}
