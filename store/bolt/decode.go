package bolt

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"sync/atomic"

	"github.com/warmcache/warmcache/store/bolt/internal/decode"
	"github.com/warmcache/warmcache/store/bolt/internal/fileerr"
	"github.com/warmcache/warmcache/store/bolt/internal/hot"
	"github.com/warmcache/warmcache/store/bolt/internal/layout"
	"github.com/warmcache/warmcache/store/bolt/internal/parallel"
)

// The read path's one decode machinery: every read that returns objects
// collects the envelopes of a chunk in its read transaction, aliasing
// bbolt's pages (no copy), takes the objects the hot tier holds, decodes
// the others on every core (decodeSelected) while the transaction is
// still open, and drops the references to the stored bytes before the
// transaction ends. Select, Scan and ScanIndex (selectWalk), ScanParallel
// (a selectWalk run ahead of its caller), List, ByIndex and Index
// (bulkDecoder, one transaction each), the informer's reads of old objects
// (ReadStatesLike) and a relist's changes (changeWalk) all use it, so the
// results are in key order and at most a chunk of envelopes is referenced
// at a time.

// selected is an object of a chunk: obj when the hot tier had it, else
// decoded from env. k and env alias the read transaction; key is the
// object key as a string for the reads that pass it on ("" for the
// others).
type selected struct {
	key string
	k   []byte
	env []byte
	obj interface{}
	// share, if set, decodes env sharing with the object about to
	// replace this one what the two encode alike (decode.Item).
	share decode.Shared
	// fill: once decoded, the object is offered to the hot tier
	// (fillHot), with env's sum and length.
	fill   bool
	sum    uint64
	envLen int
	// kept: the tier would keep it when selected (hot.Part.Fits), so
	// it is decoded sharing with the chunk's model (fillModel).
	kept bool
}

// selectedOf returns the chunk entry of item k (key as a string, or "")
// with envelope env, both aliasing the read transaction: the hot tier's
// object when it holds env's, else env, for decodeSelected.
func (s *Store) selectedOf(key string, k, env []byte) selected {
	s.db.touched(len(env))
	if obj, ok := s.hot.Peek(k, env); ok {
		return selected{key: key, k: k, obj: obj}
	}
	return selected{key: key, k: k, env: env}
}

// selectedToFill is selectedOf for a bulk read whose transaction began
// after st and that fills the hot tier: a hit makes the tier's entry fast
// (hot.Part.Lookup), and an object it must decode is offered to the tier
// once decoded (fillHot).
func (s *Store) selectedToFill(key string, k, env []byte, st hot.Stamp) selected {
	s.db.touched(len(env))
	if s.hot == nil {
		return selected{key: key, k: k, env: env}
	}
	obj, sum, ok := s.hot.Lookup(k, env, st)
	if ok {
		return selected{key: key, k: k, obj: obj}
	}
	kept := s.hot.Fits(len(k), len(env), s.sizeHint())
	return selected{key: key, k: k, env: env, fill: true, sum: sum, envLen: len(env), kept: kept}
}

// fillHot offers the hot tier the objects of chunk that a bulk read whose
// transaction began after st decoded (selectedToFill), once
// decodeSelected has run (errs is its result): a tier with room for every
// object of the store keeps them (hot.Part.Fill).
func (s *Store) fillHot(chunk []selected, errs []error, st hot.Stamp) {
	if s.hot == nil {
		return
	}
	n := s.sizeHint()
	for i := range chunk {
		c := &chunk[i]
		if c.fill && (errs == nil || errs[i] == nil) {
			key := c.key
			if key == "" {
				key = string(c.k)
			}
			s.hot.Fill(key, c.sum, c.envLen, c.obj, st, n)
			c.k = nil
		}
		c.fill = false
	}
}

// stamp returns the hot tier's stamp a read takes before its transaction
// (the zero Stamp without a tier).
func (s *Store) stamp() hot.Stamp {
	if s.hot == nil {
		return hot.Stamp{}
	}
	return s.hot.Stamp()
}

// decodeSelected decodes the objects of chunk that the hot tier did not
// hold, on up to workers goroutines (0: GOMAXPROCS), sets their obj and
// drops the references to the stored bytes (but k of the objects that
// failed, for their caller to report). It returns the errors
// (wrapping ErrCorrupt) of the objects that did not decode or whose codec
// panicked, indexed like chunk, or nil if all decoded. It must run inside
// the read transaction chunk's bytes alias.
func (s *Store) decodeSelected(chunk []selected, workers int) []error {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	return parallel.ForEachN(workers, len(chunk), func(i int) error {
		return s.decodeEntry(&chunk[i], nil)
	})
}

// fillModel is what the objects of a chunk that the hot tier will keep
// (selected.kept) are decoded sharing with (decode.Shared): the last of
// them decoded. Objects next to each other in key order are mostly of one
// shape (a namespace's pods of one ReplicaSet, a controller's
// Deployments), so the objects a small store's tier comes to hold share
// what they encode alike instead of holding a copy each: 2,000
// Deployments of a real apiserver hold 60% of the heap they hold decoded
// apart. The model aliases the chunk's read transaction, so it lives as
// long as the chunk's decoding.
type fillModel struct{ p atomic.Pointer[decode.Shared] }

// decodeEntry decodes c's envelope, if the hot tier did not give its
// object, sets c.obj and drops c's references to the stored bytes (but k
// of an object that failed, or that fillHot needs, for its caller). An
// object the tier will keep is decoded sharing with m's model, and made
// its model; m may be nil.
func (s *Store) decodeEntry(c *selected, m *fillModel) error {
	if c.env == nil {
		c.k = nil
		return nil
	}
	sh := c.share
	if c.kept && sh.IsZero() && m != nil {
		if model := m.p.Load(); model != nil {
			sh = *model
		}
	} else {
		m = nil // neither shares with the model nor becomes it
	}
	obj, err := s.decodeRecovered(c.k, c.env, sh, m)
	c.obj, c.env, c.share = obj, nil, decode.Shared{}
	if err == nil && (!c.fill || c.key != "") {
		c.k = nil
	}
	return err
}

// chunkDecoder collects a chunk of a read and decodes it on every core
// while it is collected (parallel.Chunk); newChunkDecoder makes one.
type chunkDecoder = parallel.Chunk[selected, entryDecoder]

// newChunkDecoder returns the decoder of a chunk of at most scanChunk
// entries, on workers goroutines besides the reader's (0: GOMAXPROCS).
func newChunkDecoder(s *Store, workers int) chunkDecoder {
	return chunkDecoder{Decoder: entryDecoder{s, new(fillModel)}, Size: scanChunk, Workers: workers}
}

// entryDecoder decodes the entries of a chunkDecoder: an entry the hot
// tier gave has nothing to decode.
type entryDecoder struct {
	s     *Store
	model *fillModel
}

func (d entryDecoder) Decode(e *selected) error { return d.s.decodeEntry(e, d.model) }
func (d entryDecoder) Pending(e *selected) bool { return e.env != nil }

// firstBad returns the first object of chunk, in key order, whose decode
// failed (errs as decodeSelected returned them, not nil).
func firstBad(chunk []selected, errs []error) *keyError {
	for i, err := range errs {
		if err != nil {
			return &keyError{chunk[i].key, err}
		}
	}
	return nil
}

// decodeRecovered is decode.Item with a panic turned into an error
// wrapping ErrCorrupt: bad data cannot crash the process from a decoding
// goroutine. With a non-nil model, the object decoded becomes its model.
func (s *Store) decodeRecovered(k, env []byte, sh decode.Shared, model *fillModel) (obj interface{}, err error) {
	defer func() {
		if r := recover(); r != nil {
			obj, err = nil, fmt.Errorf("%w: item %q: codec %s panicked: %v", ErrCorrupt, k, s.codec.Name(), r)
			if fileerr.IsFault(r) { // the mapping, not the codec: see startFileCheck
				s.db.reportCorrupt(err)
			}
		}
	}()
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	obj, err = decode.Item(s.codec, s.name, string(k), env, sh)
	if err == nil && model != nil {
		if like := decode.SharingWithStored(s.codec, obj, env); !like.IsZero() {
			model.p.Store(&like)
		}
	}
	return obj, err
}

// bulkDecoder is the decode of the reads that return a slice from one
// read transaction (List, ByIndex, Index): add collects envelopes into
// chunks of scanChunk, decoded on every core as they fill
// (chunkDecoder) and appended to out in the order added; objects that do
// not decode are skipped and recorded in bad. Its user calls flush at the
// end, and stop on every path before the transaction ends.
type bulkDecoder struct {
	s   *Store
	dec chunkDecoder
	out []interface{}
	bad []keyError
	// fill: the read fills the hot tier (selectedToFill), its
	// transaction having begun after st.
	fill bool
	st   hot.Stamp
}

func newBulkDecoder(s *Store, capacity int) *bulkDecoder {
	return &bulkDecoder{s: s, dec: newChunkDecoder(s, 0), out: make([]interface{}, 0, capacity)}
}

// stop ends the decoding of the current chunk (parallel.Chunk.Stop).
func (b *bulkDecoder) stop() { b.dec.Stop() }

// add queues the object of item k with envelope env, both aliasing the
// read transaction, which must stay open until flush.
func (b *bulkDecoder) add(k, env []byte) {
	if b.fill {
		b.dec.Add(b.s.selectedToFill("", k, env, b.st))
	} else {
		b.dec.Add(b.s.selectedOf("", k, env))
	}
	if b.dec.Len() == scanChunk {
		b.flush()
	}
}

// addEntry is add of the envelope that item entry v of key k refers to in
// g; a malformed entry or missing envelope is recorded in bad.
func (b *bulkDecoder) addEntry(g interface {
	EnvelopeOf(k, v []byte) ([]byte, error)
}, k, v []byte) {
	env, err := g.EnvelopeOf(k, v)
	if err != nil {
		b.flush() // keep bad in key order
		b.bad = append(b.bad, keyError{string(k), err})
		return
	}
	b.add(k, env)
}

// flush decodes the queued chunk and appends its objects to out.
func (b *bulkDecoder) flush() {
	if b.dec.Len() == 0 {
		return
	}
	chunk, errs := b.dec.Finish()
	if b.fill {
		b.s.fillHot(chunk, errs, b.st)
	}
	for i := range chunk {
		if errs != nil && errs[i] != nil {
			b.bad = append(b.bad, keyError{string(chunk[i].k), errs[i]})
			continue
		}
		b.out = append(b.out, chunk[i].obj)
	}
	b.dec = newChunkDecoder(b.s, 0)
}

// decodeItem decodes an item's envelope and payload (decode.Item). v may
// alias a bbolt page; the result does not.
func (s *Store) decodeItem(key string, v []byte) (interface{}, error) {
	return decode.Item(s.codec, s.name, key, v, decode.Shared{})
}

// readItem returns the object of item k with envelope v, from the hot
// tier when v is what the cached object was decoded from, else decoded,
// without filling the tier (bulk reads and writers' reads, so that they
// neither flush the tier nor skew its hit rate).
func (s *Store) readItem(k, v []byte) (interface{}, error) {
	s.db.touched(len(v))
	if obj, ok := s.hot.Peek(k, v); ok {
		return obj, nil
	}
	return s.decodeItem(string(k), v)
}

// readPoint is readItem for a point read whose transaction began after
// st: it counts a hit or a miss and fills the tier.
func (s *Store) readPoint(k, v []byte, st hot.Stamp) (interface{}, error) {
	s.db.touched(len(v))
	if s.hot == nil {
		return s.decodeItem(string(k), v)
	}
	sum := s.hot.Sum(v)
	if obj, ok := s.hot.Get(k, sum, st); ok {
		return obj, nil
	}
	obj, err := s.decodeItem(string(k), v)
	if err == nil {
		s.hot.Put(string(k), sum, len(v), obj, st)
	}
	return obj, err
}

// readEntry is readItem of the envelope that item entry v of key k refers
// to in g: a malformed entry or a missing envelope is an error wrapping
// ErrCorrupt, like an envelope that does not decode.
func (s *Store) readEntry(g *layout.Generation, k, v []byte) (interface{}, error) {
	env, err := g.EnvelopeOf(k, v)
	if err != nil {
		return nil, err
	}
	return s.readItem(k, env)
}
