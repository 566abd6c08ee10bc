package watchdecode

import (
	"bufio"
	"fmt"
	"io"
	"sync"
	"sync/atomic"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	"k8s.io/apimachinery/pkg/watch"
)

const (
	// chunkFrames and chunkBytes bound a chunk, the unit handed to a
	// worker; a chunk holds at least one frame, whatever its size.
	chunkFrames = 32
	chunkBytes  = 64 << 10
	// maxFrameBytes is the largest frame, as client-go's streaming decoder
	// allows; a larger one ends the stream with streaming.ErrObjectTooLarge.
	maxFrameBytes = 16 << 20
	// readBuffer buffers the body under the inner frame reader, so that
	// the reader hands over a chunk only when it would wait for the network.
	readBuffer = 32 << 10
	// maxPooledArena is the largest arena returned to the free list: one
	// grown for a large frame is left to the collector.
	maxPooledArena = 2 * chunkBytes
	// maxFreeArenas bounds the process's free list (256 to 512 KiB:
	// arenas of up to maxPooledArena): streams that keep up hold a few
	// chunks at a time. The free arenas stay live, so they count in
	// every heap goal after them, which the resident set of an idle
	// process keeps: at 16 (a stream's floor of read-ahead), five cold
	// starts of smallbench's controller at 2,000 Deployments kept
	// 16.5-19.2 MiB of RssAnon, at 4 13.8-16.5 (client-go's 16.4-18.1 in
	// the same runs), and BenchmarkWatchDecode (one stream) decoded as
	// fast.
	maxFreeArenas = 4
)

// freeArenas recycles the bytes of chunks' frames, which nothing keeps
// once their envelopes are decoded (the envelope copies the embedded
// object, as client-go's streaming decoder, which reuses its buffer,
// relies on). It keeps at most maxFreeArenas: a backlog read ahead takes
// up to the budget's worth (64 MiB), and a sync.Pool would keep every one
// of them, reachable and so live to the collector for its next two cycles
// after the backlog is decoded (the whole initial stream of a small
// resource, which its first list after the sync then finds in the heap
// goal). The arenas past the bound are garbage once decoded.
var freeArenas = make(chan *[]byte, maxFreeArenas)

// getArena returns an empty arena of at least chunkBytes.
func getArena() *[]byte {
	select {
	case a := <-freeArenas:
		return a
	default:
		b := make([]byte, 0, chunkBytes)
		return &b
	}
}

// putArena returns a to the free list unless it is full or a grew past
// maxPooledArena.
func putArena(a *[]byte) {
	if cap(*a) > maxPooledArena {
		return
	}
	*a = (*a)[:0]
	select {
	case freeArenas <- a:
	default:
	}
}

// opened counts the streams newStream created (StreamsOpened).
var opened atomic.Int64

// StreamsOpened returns how many watch streams of the process were read
// for the workers so far (with one P none is: the frame reader is
// client-go's).
func StreamsOpened() int64 { return opened.Load() }

// buffers recycles the read buffers of ended streams' bodies, which only
// their reader goroutines use.
var buffers = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, readBuffer) }}

// stream is a frame reader whose frames are decoded on workers. A reader
// goroutine reads frames in order into chunks; each chunk goes to the
// ordered queue, which the consumer drains, and to the work queue, which
// workers drain; whoever claims a chunk first decodes it (the consumer
// claims the chunk it waits for if no worker has, so it never waits for
// an idle pool). Read returns a one-byte token per frame; envelope and
// object then answer for that frame.
type stream struct {
	frames   io.ReadCloser // inner's frame reader over the buffered body
	envelope k8sruntime.Decoder
	decoder  k8sruntime.Decoder

	// raw holds the chunks read ahead of the decode window, undecoded
	// (see readahead.go); the forwarder moves them to ordered and work.
	raw    chan *chunk
	budget *Budget
	held   atomic.Int64  // bytes of the chunks in raw
	wake   chan struct{} // signalled when a chunk leaves raw or the budget frees bytes

	ordered chan *chunk // the chunks in stream order, for the consumer
	work    chan *chunk // the same chunks, for the workers
	done    chan struct{}
	once    sync.Once

	maxWorkers int32
	running    atomic.Int32 // workers running

	// The reader goroutine's.
	scratch []byte
	pending *chunk

	// The consumer's (the StreamWatcher's goroutine).
	cur  *chunk
	pos  int
	item *item
}

// chunk is a run of consecutive frames and, after its last frame, the
// error that ended the stream if it did.
type chunk struct {
	arena *[]byte
	ends  []int // frame i is arena[ends[i-1]:ends[i]]
	items []item
	err   error

	// cost is the bytes the chunk holds while read ahead, budgeted the
	// part of it taken from the stream's Budget.
	cost, budgeted int64

	claimed atomic.Bool
	decoded chan struct{} // closed when items are set
}

// item is a decoded frame: what rest/watch.Decoder would have got from
// the envelope serializer and the object decoder.
type item struct {
	event  metav1.WatchEvent
	other  k8sruntime.Object // the envelope decoded to another type
	envErr error
	obj    k8sruntime.Object
	objErr error
}

func newStream(f k8sruntime.Framer, body io.ReadCloser, envelope, decoder k8sruntime.Decoder, procs int, budget *Budget) *stream {
	s := &stream{
		envelope:   envelope,
		decoder:    decoder,
		raw:        make(chan *chunk, budget.maxChunks()),
		budget:     budget,
		wake:       make(chan struct{}, 1),
		ordered:    make(chan *chunk, 2*procs),
		work:       make(chan *chunk, 2*procs),
		done:       make(chan struct{}),
		maxWorkers: int32(procs),
		scratch:    make([]byte, 1024),
	}
	opened.Add(1)
	buffered := buffers.Get().(*bufio.Reader)
	buffered.Reset(flushingReader{s: s, r: body})
	s.frames = f.NewFrameReader(bufferedBody{Reader: buffered, Closer: body})
	go func() {
		// The forwarder runs until the reader closes raw.
		go s.forward()
		s.read()
		close(s.raw)
		// Nothing reads the buffer once read returns: Close only closes
		// the body.
		buffered.Reset(nil)
		buffers.Put(buffered)
	}()
	return s
}

// bufferedBody reads from a buffer over the body and closes the body.
type bufferedBody struct {
	io.Reader
	io.Closer
}

// flushingReader queues the pending chunk before each read of the body,
// which may wait for the network.
type flushingReader struct {
	s *stream
	r io.Reader
}

func (f flushingReader) Read(p []byte) (int, error) {
	if c := f.s.pending; c != nil && len(c.ends) > 0 {
		f.s.pending = nil
		if !f.s.queueRaw(c) {
			return 0, io.EOF
		}
	}
	return f.r.Read(p)
}

// read reads frames until the stream ends or is closed.
func (s *stream) read() {
	for {
		frame, err := s.readFrame()
		c := s.pending
		if c == nil {
			c = newChunk()
			s.pending = c
		}
		if err != nil {
			c.err = err
			s.pending = nil
			s.queueRaw(c)
			return
		}
		if len(c.ends) > 0 && len(*c.arena)+len(frame) > chunkBytes {
			s.pending = nil
			if !s.queueRaw(c) {
				return
			}
			c = newChunk()
			s.pending = c
		}
		*c.arena = append(*c.arena, frame...)
		c.ends = append(c.ends, len(*c.arena))
		if len(c.ends) == chunkFrames || len(*c.arena) >= chunkBytes {
			s.pending = nil
			if !s.queueRaw(c) {
				return
			}
		}
	}
}

// readFrame reads the next frame into scratch as client-go's streaming
// decoder does: growing the buffer on io.ErrShortBuffer up to
// maxFrameBytes.
func (s *stream) readFrame() ([]byte, error) {
	base := 0
	for {
		n, err := s.frames.Read(s.scratch[base:])
		if err == io.ErrShortBuffer {
			if n == 0 {
				return nil, fmt.Errorf("got short buffer with n=0, base=%d, cap=%d", base, cap(s.scratch))
			}
			if len(s.scratch) < maxFrameBytes {
				base += n
				s.scratch = append(s.scratch, make([]byte, len(s.scratch))...)
				continue
			}
			return nil, streaming.ErrObjectTooLarge
		}
		if err != nil {
			return nil, err
		}
		return s.scratch[:base+n], nil
	}
}

func newChunk() *chunk {
	return &chunk{arena: getArena(), decoded: make(chan struct{})}
}

// dispatch queues c for the consumer and the workers, and starts a worker
// if fewer than maxWorkers run. False if the stream was closed.
func (s *stream) dispatch(c *chunk) bool {
	if len(c.ends) == 0 {
		// Nothing to decode: only the error.
		c.claimed.Store(true)
		s.release(c)
		close(c.decoded)
	}
	select {
	case s.ordered <- c:
	case <-s.done:
		return false
	}
	if c.claimed.Load() {
		return true
	}
	select {
	case s.work <- c:
	case <-s.done:
		return false
	}
	for {
		n := s.running.Load()
		if n >= s.maxWorkers {
			return true
		}
		if s.running.CompareAndSwap(n, n+1) {
			go s.worker()
			return true
		}
	}
}

// worker decodes queued chunks until none is queued. It leaves the count
// of running workers before its last look at the queue, so that a chunk
// queued meanwhile finds either this worker or room for a new one.
func (s *stream) worker() {
	for {
		select {
		case c := <-s.work:
			s.decodeClaimed(c)
			continue
		default:
		}
		s.running.Add(-1)
		if len(s.work) == 0 {
			return
		}
		n := s.running.Load()
		if n >= s.maxWorkers || !s.running.CompareAndSwap(n, n+1) {
			return
		}
	}
}

// decodeClaimed decodes c unless someone else claimed it.
func (s *stream) decodeClaimed(c *chunk) {
	if !c.claimed.CompareAndSwap(false, true) {
		return
	}
	select {
	case <-s.done:
		// Nobody will read it.
	default:
		s.decode(c)
	}
	s.release(c)
	close(c.decoded)
}

// decode decodes c's frames as rest/watch.Decoder does.
func (s *stream) decode(c *chunk) {
	// Fresh for every chunk, never pooled: an event's Object.Raw is
	// copied out of the arena by its Unmarshal, and the object decoder
	// remembers it as the object's message (package store/wire), which
	// must outlive the arena's reuse.
	c.items = make([]item, len(c.ends))
	start := 0
	for i, end := range c.ends {
		it := &c.items[i]
		frame := (*c.arena)[start:end]
		start = end
		res, _, err := s.envelope.Decode(frame, nil, &it.event)
		switch {
		case err != nil:
			it.envErr = err
			continue
		case res != &it.event:
			it.other = res
			continue
		}
		switch watch.EventType(it.event.Type) {
		case watch.Added, watch.Modified, watch.Deleted, watch.Error, watch.Bookmark:
			it.obj, it.objErr = k8sruntime.Decode(s.decoder, it.event.Object.Raw)
		}
	}
}

// release returns c's arena to the free list.
func (s *stream) release(c *chunk) {
	if c.arena != nil {
		putArena(c.arena)
		c.arena = nil
	}
}

// Read returns a one-byte token for the next frame, whose decoded
// envelope and object envelope and object then return, or the error that
// ended the stream after the last frame. After Close it returns io.EOF:
// the watch was stopped, which the StreamWatcher does not report.
func (s *stream) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	s.item = nil
	for {
		select {
		case <-s.done:
			return 0, io.EOF
		default:
		}
		if c := s.cur; c != nil {
			if s.pos > 0 {
				c.items[s.pos-1] = item{}
			}
			if s.pos < len(c.items) {
				s.item = &c.items[s.pos]
				s.pos++
				p[0] = 0
				return 1, nil
			}
			if c.err != nil {
				return 0, c.err
			}
			s.cur = nil
		}
		var c *chunk
		select {
		case c = <-s.ordered:
		case <-s.done:
			return 0, io.EOF
		}
		s.decodeClaimed(c)
		select {
		case <-c.decoded:
		case <-s.done:
			return 0, io.EOF
		}
		s.cur, s.pos = c, 0
	}
}

// event answers the envelope serializer's Decode for the current frame.
func (s *stream) event(into k8sruntime.Object) (k8sruntime.Object, *schema.GroupVersionKind, error) {
	it := s.item
	switch {
	case it == nil:
		return nil, nil, fmt.Errorf("watch stream: no frame to decode")
	case it.envErr != nil:
		return nil, nil, it.envErr
	case it.other != nil:
		return it.other, nil, nil
	}
	e, ok := into.(*metav1.WatchEvent)
	if !ok {
		return nil, nil, fmt.Errorf("watch stream: cannot decode an event into %T", into)
	}
	*e = it.event
	return e, nil, nil
}

// object answers the object decoder's Decode for the current frame.
func (s *stream) object() (k8sruntime.Object, *schema.GroupVersionKind, error) {
	it := s.item
	if it == nil {
		return nil, nil, fmt.Errorf("watch stream: no frame to decode")
	}
	return it.obj, nil, it.objErr
}

// Close stops the reader and the workers and closes the body.
func (s *stream) Close() error {
	var err error
	s.once.Do(func() {
		close(s.done)
		err = s.frames.Close()
	})
	return err
}
