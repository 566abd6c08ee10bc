package bolt

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"

	bbolt "go.etcd.io/bbolt"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"

	"github.com/warmcache/warmcache/store"
	"github.com/warmcache/warmcache/store/bolt/internal/hot"
	"github.com/warmcache/warmcache/store/bolt/internal/layout"
	"github.com/warmcache/warmcache/store/codec"
	"github.com/warmcache/warmcache/store/wire"
)

// readLive runs fn on the live generation in a read transaction.
func (s *Store) readLive(op string, fn func(g *layout.Generation) error) error {
	if s.closed.Load() {
		return s.errClosed(op)
	}
	err := s.db.view(op, func(tx *bbolt.Tx) error {
		res := tx.Bucket(s.bname)
		if res == nil {
			return fmt.Errorf("%w: resource bucket missing", ErrCorrupt)
		}
		g, err := layout.OpenLive(res)
		if err != nil {
			return fmt.Errorf("%w: %w", ErrCorrupt, err)
		}
		return fn(g)
	})
	if err != nil {
		return s.errorf(op, err)
	}
	return nil
}

// decodeItem decodes an item's envelope and payload. v may alias a bbolt
// page; the result does not.
func (s *Store) decodeItem(key string, v []byte) (interface{}, error) {
	return s.decodeItemShared(key, v, sharedDecode{})
}

// decodeItemShared is decodeItem sharing, through sh, what the item
// encodes alike with the object sh was made with (codec.Sharing); with a
// zero sh, decodeItem.
func (s *Store) decodeItemShared(key string, v []byte, sh sharedDecode) (interface{}, error) {
	env, err := layout.DecodeEnvelope(v)
	if err != nil {
		return nil, fmt.Errorf("%w: item %q: %w", ErrCorrupt, key, err)
	}
	var obj runtime.Object
	if sh.codec != nil {
		obj, err = sh.codec.DecodeSharing(env.Payload, sh.like, sh.msg)
	} else {
		obj, err = codec.DecodeFor(s.codec, env.Payload, func() []byte { return layout.ItemAD(s.name, key, env.RV, env.UID) })
	}
	if err != nil {
		return nil, fmt.Errorf("%w: item %q: codec %s: %w", ErrCorrupt, key, s.codec.Name(), err)
	}
	return obj, nil
}

// sharedDecode is a decode sharing with like, whose protobuf message is
// msg (codec.Sharing). The zero value decodes without sharing.
type sharedDecode struct {
	codec codec.Sharing
	like  runtime.Object
	msg   []byte
}

// sharingCodec returns the store's codec if it can share: it implements
// codec.Sharing and is not Bound (a Bound codec binds each payload to its
// item).
func (s *Store) sharingCodec() (codec.Sharing, bool) {
	sh, ok := s.codec.(codec.Sharing)
	if !ok {
		return nil, false
	}
	if _, bound := s.codec.(codec.Bound); bound {
		return nil, false
	}
	return sh, true
}

// sharingWith returns the decode sharing with like, the object about to
// replace the item decoded, if the store's codec can share and like's
// message is remembered (package wire); else, or for a nil like, the
// zero sharedDecode.
func (s *Store) sharingWith(like interface{}) sharedDecode {
	if like == nil {
		return sharedDecode{}
	}
	msg, ok := wire.Peek(like)
	if !ok {
		return sharedDecode{}
	}
	return s.sharing(like, msg)
}

// sharingWithStored is sharingWith for like decoded from the envelope
// likeEnv, whose payload holds its message: the relist's changes, whose
// new objects come from the file. A malformed likeEnv gives the zero
// sharedDecode. The result aliases likeEnv, and so the read transaction,
// whose goroutine it must run in (it reads likeEnv: a fault reading the
// mapping is then recovered, see filecheck.go).
func (s *Store) sharingWithStored(like interface{}, likeEnv []byte) sharedDecode {
	sh, ok := s.sharingCodec()
	if !ok || like == nil {
		return sharedDecode{}
	}
	payload, err := layout.EnvelopePayload(likeEnv)
	if err != nil {
		return sharedDecode{}
	}
	msg, err := sh.Message(payload)
	if err != nil {
		return sharedDecode{}
	}
	return s.sharing(like, msg)
}

// sharing returns the decode sharing with like, whose message is msg, if
// the store's codec can share and like is a runtime.Object.
func (s *Store) sharing(like interface{}, msg []byte) sharedDecode {
	sh, ok := s.sharingCodec()
	if !ok {
		return sharedDecode{}
	}
	ro, ok := like.(runtime.Object)
	if !ok {
		return sharedDecode{}
	}
	return sharedDecode{codec: sh, like: ro, msg: msg}
}

// readItem returns the object of item k with envelope v, from the hot
// tier when v is what the cached object was decoded from, else decoded,
// without filling the tier (bulk reads and writers' reads, so that they
// neither flush the tier nor skew its hit rate).
func (s *Store) readItem(k, v []byte) (interface{}, error) {
	if obj, ok := s.hot.Peek(k, v); ok {
		return obj, nil
	}
	return s.decodeItem(string(k), v)
}

// readPoint is readItem for a point read whose transaction began after
// st: it counts a hit or a miss and fills the tier.
func (s *Store) readPoint(k, v []byte, st hot.Stamp) (interface{}, error) {
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

// keyError is an item that failed to decode, or whose stored bytes do not
// match their checksum.
type keyError struct {
	key string
	err error
}

// errIndexWithoutItem is wrapped by the error of an index entry that names
// a key without an item.
var errIndexWithoutItem = errors.New("index entry without an item")

// corruptPart names the part of the data err found corrupt, for the
// corrupt objects metric: the part whose checksum failed, "index" for an
// index entry without its item, else "envelope" (an envelope or payload
// that does not decode, a missing envelope).
func corruptPart(err error) string {
	if p := layout.PartOf(err); p != "" {
		return p
	}
	if errors.Is(err, errIndexWithoutItem) {
		return layout.PartIndex
	}
	return layout.PartEnvelope
}

// countCorrupt counts a corrupt record of part (Metrics.CorruptRecord).
func (s *Store) countCorrupt(part string) { s.db.metrics.CorruptRecord(s.name, part) }

// corrupted handles items that failed to decode or whose checksum did not
// match during op: it logs and counts each
// (warmcache_store_corrupt_objects_total), marks the resource incomplete
// (in the file, so that the next start relists) and calls OnCorruption. It
// must be called without s.mu held.
func (s *Store) corrupted(op string, bad []keyError) {
	if len(bad) == 0 {
		return
	}
	for _, b := range bad {
		part := corruptPart(b.err)
		s.countCorrupt(part)
		s.logger.Error(b.err, "Skipping an object that cannot be decoded; the resource is marked incomplete", "op", op, "key", b.key, "part", part)
	}
	err := s.errorf(op, bad[0].err)
	s.markIncomplete(fmt.Sprintf("%s: %d objects could not be decoded, first %q: %v", op, len(bad), bad[0].key, bad[0].err))
	if s.onCorrupt != nil {
		s.onCorrupt(err)
	}
}

// markIncomplete records that the items are no longer a complete picture.
func (s *Store) markIncomplete(reason string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed.Load() || s.meta.State != layout.StateComplete {
		return
	}
	if s.readOnly {
		m := s.meta.Clone()
		m.State, m.Reason = layout.StateIncomplete, reason
		s.setMetaLocked(m)
		return
	}
	err := s.writeLiveLocked("mark incomplete", func(_ *layout.Generation, m *layout.Meta) error {
		m.State, m.Reason = layout.StateIncomplete, reason
		return nil
	})
	if err != nil {
		s.logger.Error(err, "Failed to record the resource as incomplete")
		m := s.meta.Clone()
		m.State, m.Reason = layout.StateIncomplete, reason
		s.setMetaLocked(m)
	}
}

// sizeHint is the recorded number of objects, a capacity hint.
func (s *Store) sizeHint() int {
	return int(min(max(s.status.Load().meta.Objects, 0), 1<<20))
}

// key calls the key function through store.KeyOf: its error or panic is
// a cache.KeyError, so bad input never crashes the process.
func (s *Store) key(obj interface{}) (string, error) { return store.KeyOf(s.keyFunc, obj) }

// KeyFunc returns the store's key function.
func (s *Store) KeyFunc() cache.KeyFunc { return s.keyFunc }

// Get returns the object stored under obj's key.
func (s *Store) Get(obj interface{}) (item interface{}, exists bool, err error) {
	key, err := s.key(obj)
	if err != nil {
		return nil, false, s.errorf("get", err)
	}
	return s.GetByKey(key)
}

// GetByKey returns the object stored under key, decoded. An object that
// cannot be decoded returns an error wrapping ErrCorrupt and marks the
// resource incomplete.
func (s *Store) GetByKey(key string) (item interface{}, exists bool, err error) {
	// st is what the read saw of the hot tier before its transaction
	// (zero, the most cautious stamp, after Close, which readLive
	// refuses).
	var st hot.Stamp
	if s.hot != nil && !s.closed.Load() {
		var obj interface{}
		var ok bool
		if obj, ok, st = s.hot.Fast(key); ok {
			return obj, true, nil
		}
	}
	var bad error
	err = s.readLive("get", func(g *layout.Generation) error {
		k := []byte(key)
		v := g.Items.Get(k)
		if v == nil {
			return nil
		}
		env, err := g.EnvelopeOf(k, v)
		if err != nil {
			bad = err
			return nil
		}
		item, bad = s.readPoint(k, env, st)
		exists = bad == nil
		return nil
	})
	if err != nil {
		return nil, false, err
	}
	if bad != nil {
		s.corrupted("get", []keyError{{key, bad}})
		return nil, false, s.errorf("get", bad)
	}
	return item, exists, nil
}

// List returns every stored object in key order, read in one read
// transaction and decoded on every core in chunks of 256 objects (see
// decode.go); objects the hot tier holds are taken from it, without
// filling it. Objects that cannot be decoded are skipped, logged and the
// resource marked incomplete (List has no error result). It returns nil
// after Close.
//
// Cost: a decode of every object not in the hot tier, and the result:
// client-go's unmodified indexer.List and cache.ListAll pay this on every
// call; store.Select (warmcache's listers) decodes only what it returns.
func (s *Store) List() []interface{} {
	var out []interface{}
	var bad []keyError
	err := s.readLive("list", func(g *layout.Generation) error {
		b := newBulkDecoder(s, s.sizeHint())
		c := g.Items.Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			b.addEntry(g, k, v)
		}
		b.flush()
		out, bad = b.out, b.bad
		return nil
	})
	s.readFailed("list", err)
	s.corrupted("list", bad)
	return out
}

// readFailed logs a read error of a method without an error result.
func (s *Store) readFailed(op string, err error) {
	if err != nil && !errors.Is(err, ErrClosed) {
		s.logger.Error(err, "Read failed", "op", op)
	}
}

// ListKeys returns every stored key in order (nil after Close).
func (s *Store) ListKeys() []string {
	var out []string
	err := s.readLive("list keys", func(g *layout.Generation) error {
		out = make([]string, 0, s.sizeHint())
		c := g.Items.Cursor()
		for k, _ := c.First(); k != nil; k, _ = c.Next() {
			out = append(out, string(k))
		}
		return nil
	})
	s.readFailed("list keys", err)
	return out
}

// ResourceVersionOf returns the resourceVersion of the object stored under
// key, read from the item's envelope without decoding the object.
// An item whose checksum does not match returns an error wrapping
// ErrChecksum and is handled like an object that does not decode.
func (s *Store) ResourceVersionOf(key string) (rv string, exists bool, err error) {
	const op = "resource version of"
	var bad error
	err = s.readLive(op, func(g *layout.Generation) error {
		var env []byte
		env, rv, bad = lookupRV(g, []byte(key))
		exists = env != nil
		return nil
	})
	if err != nil {
		return "", false, err
	}
	if bad != nil {
		s.corrupted(op, []keyError{{key, bad}})
		return "", false, s.errorf(op, bad)
	}
	return rv, exists, nil
}

// lookupRV returns the envelope stored under key in g, nil if there is no
// such item, and its resourceVersion. An envelope that does not verify or
// whose resourceVersion does not parse is an error wrapping ErrCorrupt.
func lookupRV(g *layout.Generation, key []byte) (env []byte, rv string, err error) {
	env, err = g.Lookup(key)
	if err != nil || env == nil {
		return nil, "", err
	}
	if rv, err = layout.EnvelopeRV(env); err != nil {
		return nil, "", fmt.Errorf("%w: item %q: %w", ErrCorrupt, key, err)
	}
	return env, rv, nil
}

// indexFor returns the named indexer or an error wrapping
// store.ErrIndexNotFound.
func (s *Store) indexFor(op, name string) (indexer, error) {
	ix := s.indexers.Load()
	i, ok := ix.pos[name]
	if !ok {
		return indexer{}, s.errorf(op, fmt.Errorf("index %q: %w", name, store.ErrIndexNotFound))
	}
	return ix.list[i], nil
}

// indexKeysIn appends to keys the object keys filed under value in
// index x, in key order, and to bad the entries whose checksum does not
// match (skipped).
func indexKeysIn(x index, value string, keys []string, bad []keyError) ([]string, []keyError) {
	prefix := layout.AppendIndexPrefix(nil, value)
	c := x.b.Cursor()
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		key := string(k[len(prefix):])
		if err := x.sums.Verify(k, v); err != nil {
			bad = append(bad, keyError{key, indexEntryError(x.name, value, key, err)})
			continue
		}
		keys = append(keys, key)
	}
	return keys, bad
}

// indexEntryError is the error of the entry of index name filing key
// under value whose checksum does not match (both as stored).
func indexEntryError(name, value, key string, err error) error {
	return fmt.Errorf("%w: index %q: entry for %q under %q: %w", ErrCorrupt, name, key, value, err)
}

// index is an index bucket of a generation, open in a read transaction,
// and the checksums of its entries.
type index struct {
	name string
	b    *bbolt.Bucket
	sums layout.IndexSum
}

// openIndex returns the named index of g.
func openIndex(g *layout.Generation, name string) (index, error) {
	b := g.Index.Bucket(layout.IndexBucketName(name))
	if b == nil {
		return index{}, fmt.Errorf("%w: index bucket %q missing", ErrCorrupt, name)
	}
	return index{name: name, b: b, sums: layout.NewIndexSum(name)}, nil
}

// getKeys decodes the objects stored under keys on every core, in the
// order of keys, skipping (and returning) those that fail. A key without
// an item is reported as corrupt too: the index promised it.
func (s *Store) getKeys(g *layout.Generation, keys []string) ([]interface{}, []keyError) {
	b := newBulkDecoder(s, len(keys))
	for _, key := range keys {
		k := []byte(key)
		v := g.Items.Get(k)
		if v == nil {
			b.flush()
			b.bad = append(b.bad, keyError{key, fmt.Errorf("%w: %w: %q", ErrCorrupt, errIndexWithoutItem, key)})
			continue
		}
		b.addEntry(g, k, v)
	}
	b.flush()
	return b.out, b.bad
}

// Index returns the stored objects whose values for indexName share at
// least one value with those of obj, in key order.
func (s *Store) Index(indexName string, obj interface{}) ([]interface{}, error) {
	x, err := s.indexFor("index", indexName)
	if err != nil {
		return nil, err
	}
	values, err := indexValuesOf(x, "", obj)
	if err != nil {
		return nil, s.errorf("index", err)
	}
	var out []interface{}
	var bad []keyError
	err = s.readLive("index", func(g *layout.Generation) error {
		x, err := openIndex(g, indexName)
		if err != nil {
			return err
		}
		var keys []string
		var badEntries []keyError
		for _, v := range values {
			keys, badEntries = indexKeysIn(x, v, keys, badEntries)
		}
		if len(values) > 1 {
			keys = sortedUnique(keys)
		}
		out, bad = s.getKeys(g, keys)
		bad = append(badEntries, bad...)
		return nil
	})
	if err != nil {
		return nil, err
	}
	s.corrupted("index", bad)
	return out, nil
}

// IndexKeys returns, in order, the keys of the stored objects whose values
// for indexName include indexedValue.
func (s *Store) IndexKeys(indexName, indexedValue string) ([]string, error) {
	if _, err := s.indexFor("index keys", indexName); err != nil {
		return nil, err
	}
	keys := []string{}
	var bad []keyError
	err := s.readLive("index keys", func(g *layout.Generation) error {
		x, err := openIndex(g, indexName)
		if err != nil {
			return err
		}
		keys, bad = indexKeysIn(x, indexedValue, keys, nil)
		return nil
	})
	if err != nil {
		return nil, err
	}
	s.corrupted("index keys", bad)
	return keys, nil
}

// ByIndex returns, in key order, the stored objects whose values for
// indexName include indexedValue. Objects that cannot be decoded are
// skipped, logged and the resource marked incomplete.
func (s *Store) ByIndex(indexName, indexedValue string) ([]interface{}, error) {
	if _, err := s.indexFor("by index", indexName); err != nil {
		return nil, err
	}
	var out []interface{}
	var bad []keyError
	err := s.readLive("by index", func(g *layout.Generation) error {
		x, err := openIndex(g, indexName)
		if err != nil {
			return err
		}
		keys, badEntries := indexKeysIn(x, indexedValue, nil, nil)
		out, bad = s.getKeys(g, keys)
		bad = append(badEntries, bad...)
		return nil
	})
	if err != nil {
		return nil, err
	}
	s.corrupted("by index", bad)
	return out, nil
}

// ListIndexFuncValues returns the values of indexName that at least one
// stored object has, in the order of their index keys (see
// layout.AppendIndexPrefix: values up to 1 KiB in order, longer ones by
// their first 256 bytes and a hash). An unknown index yields an empty list, as in
// client-go; a read error is logged and yields what was read.
func (s *Store) ListIndexFuncValues(indexName string) []string {
	out := []string{}
	if _, err := s.indexFor("list index values", indexName); err != nil {
		return out
	}
	var bad []keyError
	err := s.readLive("list index values", func(g *layout.Generation) error {
		x, err := openIndex(g, indexName)
		if err != nil {
			return err
		}
		c := x.b.Cursor()
		for k, v := c.First(); k != nil; {
			value, key, err := layout.SplitIndexKey(k, v)
			if err == nil {
				err = x.sums.Verify(k, v)
			}
			if err != nil {
				// A damaged entry names no value that can be
				// trusted: skip it, not the entries after it.
				bad = append(bad, keyError{key, indexEntryError(indexName, value, key, err)})
				k, v = c.Next()
				continue
			}
			out = append(out, value)
			// Skip the other keys filed under value: seek past
			// escaped(value) 0x00 with the smallest greater prefix.
			next := layout.AppendIndexPrefix(nil, value)
			next[len(next)-1] = 0x01
			k, v = c.Seek(next)
		}
		return nil
	})
	s.readFailed("list index values", err)
	s.corrupted("list index values", bad)
	return out
}

func sortedUnique(keys []string) []string {
	seen := make(map[string]struct{}, len(keys))
	out := keys[:0]
	for _, k := range keys {
		if _, ok := seen[k]; !ok {
			seen[k] = struct{}{}
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// scanChunk is the number of objects Scan, ScanIndex and Vanished decode
// per read transaction.
const scanChunk = 256

// Scan calls fn for every stored object in key order. It reads chunks of
// scanChunk objects, each in its own read transaction and decoded on
// every core inside it (see decode.go), and calls fn outside any
// transaction, so fn may read the store and memory stays proportional to
// a chunk; writes made during the scan may or may not be seen. It stops
// at the first error fn returns and returns it unchanged. An object that
// cannot be decoded stops the scan with an error wrapping ErrCorrupt and
// marks the resource incomplete.
func (s *Store) Scan(ctx context.Context, fn store.ScanFunc) error {
	return s.walk(ctx, "scan", store.Selection{}, fn)
}

// ScanIndex is Scan restricted to the objects whose values for indexName
// include indexedValue. An unknown index returns an error wrapping
// store.ErrIndexNotFound.
func (s *Store) ScanIndex(ctx context.Context, indexName, indexedValue string, fn store.ScanFunc) error {
	if _, err := s.indexFor("scan index", indexName); err != nil {
		return err
	}
	return s.walk(ctx, "scan index", store.Selection{Index: indexName, Value: indexedValue}, fn)
}

// cursor is what seekAfter and scan need of a cursor: a *bbolt.Cursor over
// an index bucket or a layout.ItemCursor over an items bucket.
type cursor interface {
	First() ([]byte, []byte)
	Next() ([]byte, []byte)
	Seek(seek []byte) ([]byte, []byte)
}

// seekAfter positions c on the first key greater than after (the first key
// if after is nil). The empty object key, which a nil after cannot name,
// is always the first key: a chunked loop has moved past it before its
// after is set from a later key, since every chunk holds more than one.
func seekAfter(c cursor, after []byte) ([]byte, []byte) {
	if after == nil {
		return c.First()
	}
	k, v := c.Seek(after)
	if k != nil && bytes.Equal(k, after) {
		k, v = c.Next()
	}
	return k, v
}

type keyObject struct {
	key string
	obj interface{}
}
