package bolt

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/vmihailenco/msgpack/v5"
	bbolt "go.etcd.io/bbolt"
)

// File layout (see doc.go for the prose):
//
//	warmcache                      format marker bucket
//	  format -> msgpack fileFormat
//	res;g=..;v=..;r=..;...         one bucket per resource (Identity.String)
//	  meta   -> msgpack resourceMeta
//	  live   -> 8-byte big-endian generation number
//	  gen/                         generations of the content
//	    <8-byte gen>/
//	      items/    key -> 8-byte blob id + reverse entry (msgpack map index
//	                       name -> values; empty without values)
//	      blobs/    8-byte blob id -> envelope [rv, uid, payload]
//	      index/
//	        <name>/ escaped(value) 0x00 key -> empty
//
// Envelopes live apart from the keys so that a write in watch order (keys
// spread over the key space) rewrites a leaf of small item entries and
// appends its envelope, instead of rewriting a leaf of neighbouring
// envelopes: at 100k pods that halves the bytes a random add writes. A
// blob id is the blobs bucket's sequence when the item was added, and an
// update rewrites the envelope under the same id.

// A Replace stages a new generation and Commit moves the live pointer to it
// in one transaction; the old generation is deleted afterwards.

// Versions of what this package writes.
const (
	// formatVersion is the version of the file layout.
	formatVersion = 1
	// schemaVersion is the version of a resource's layout and encodings
	// (item entries, envelopes, reverse entries, index keys). A resource
	// recorded with another schema version is discarded. Version 1 kept
	// envelopes in the items bucket and reverse entries in their own.
	schemaVersion = 2
	// formatMagic marks a warmcache file.
	formatMagic = "warmcache"
)

var (
	markerBucket = []byte("warmcache")
	formatKey    = []byte("format")
	metaKey      = []byte("meta")
	liveKey      = []byte("live")
	genBucket    = []byte("gen")
	itemsBucket  = []byte("items")
	blobsBucket  = []byte("blobs")
	indexBucket  = []byte("index")
)

// fileFormat is the value of warmcache/format.
type fileFormat struct {
	Magic   string `msgpack:"magic"`
	Version int    `msgpack:"version"`
	Created int64  `msgpack:"created"` // unix nanoseconds
}

// ResourceState is the recorded health of a resource's data.
type ResourceState string

const (
	// StateNew: no Replace was ever committed; the items (if any) are
	// incremental changes only.
	StateNew ResourceState = "new"
	// StateComplete: the items are a complete picture of the server at
	// the recorded resourceVersion.
	StateComplete ResourceState = "complete"
	// StateIncomplete: the items were complete once but something was
	// lost since (an item that does not decode); a relist is needed.
	StateIncomplete ResourceState = "incomplete"
	// StateRelisting is reported by Resources (never recorded as such)
	// for a resource with a staged, uncommitted Replace.
	StateRelisting ResourceState = "relisting"
)

// resourceMeta is the value of <resource>/meta. Fields are encoded by name,
// so that tools can read it.
type resourceMeta struct {
	Schema       int           `msgpack:"schema"`
	Identity     Identity      `msgpack:"identity"`
	Codec        string        `msgpack:"codec"`
	TypeHash     string        `msgpack:"typeHash,omitempty"` // typeFingerprint of the decoded type
	Indexes      []string      `msgpack:"indexes"`            // sorted
	IndexVersion string        `msgpack:"indexVersion"`
	IndexBuild   bool          `msgpack:"indexBuild"` // an index rebuild is under way
	RV           string        `msgpack:"rv"`
	State        ResourceState `msgpack:"state"`
	Reason       string        `msgpack:"reason,omitempty"` // why incomplete
	Objects      int64         `msgpack:"objects"`
	Staging      uint64        `msgpack:"staging"` // generation of an open Replace, 0 if none
	NextGen      uint64        `msgpack:"nextGen"`
	Created      int64         `msgpack:"created"`  // unix nanoseconds
	Updated      int64         `msgpack:"updated"`  // last write
	Relisted     int64         `msgpack:"relisted"` // last committed Replace
}

func (m *resourceMeta) clone() resourceMeta {
	c := *m
	c.Indexes = slices.Clone(m.Indexes)
	return c
}

func encodeMeta(m *resourceMeta) ([]byte, error) {
	b, err := msgpack.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("encode resource meta: %w", err)
	}
	return b, nil
}

func decodeMeta(b []byte) (resourceMeta, error) {
	var m resourceMeta
	if err := msgpack.Unmarshal(b, &m); err != nil {
		return m, fmt.Errorf("decode resource meta: %w", err)
	}
	return m, nil
}

func putMeta(res *bbolt.Bucket, m *resourceMeta) error {
	m.Updated = time.Now().UnixNano()
	b, err := encodeMeta(m)
	if err != nil {
		return err
	}
	return res.Put(metaKey, b)
}

func genName(gen uint64) []byte {
	return binary.BigEndian.AppendUint64(nil, gen)
}

func liveGenOf(res *bbolt.Bucket) (uint64, error) {
	v := res.Get(liveKey)
	if len(v) != 8 {
		return 0, errors.New("live generation pointer missing or malformed")
	}
	return binary.BigEndian.Uint64(v), nil
}

// generation is the set of buckets of one generation of a resource's
// content, open in one transaction.
type generation struct {
	b     *bbolt.Bucket
	items *bbolt.Bucket
	blobs *bbolt.Bucket
	index *bbolt.Bucket
}

// blobsFill is the fill percent of the blobs bucket's pages: envelopes are
// appended in id order, so full pages stay full (bbolt's default of half
// suits keys inserted anywhere).
const blobsFill = 0.9

// openGeneration returns generation gen of res, or an error if a bucket is
// missing.
func openGeneration(res *bbolt.Bucket, gen uint64) (*generation, error) {
	gens := res.Bucket(genBucket)
	if gens == nil {
		return nil, errors.New("generations bucket missing")
	}
	g := &generation{b: gens.Bucket(genName(gen))}
	if g.b == nil {
		return nil, fmt.Errorf("generation %d missing", gen)
	}
	g.items, g.blobs, g.index = g.b.Bucket(itemsBucket), g.b.Bucket(blobsBucket), g.b.Bucket(indexBucket)
	if g.items == nil || g.blobs == nil || g.index == nil {
		return nil, fmt.Errorf("generation %d is missing a bucket", gen)
	}
	g.blobs.FillPercent = blobsFill
	return g, nil
}

// openLive returns the live generation of res.
func openLive(res *bbolt.Bucket) (*generation, error) {
	gen, err := liveGenOf(res)
	if err != nil {
		return nil, err
	}
	return openGeneration(res, gen)
}

// createGeneration creates generation gen of res with an index bucket per
// name. It fails if it exists.
func createGeneration(res *bbolt.Bucket, gen uint64, indexes []string) (*generation, error) {
	gens, err := res.CreateBucketIfNotExists(genBucket)
	if err != nil {
		return nil, err
	}
	b, err := gens.CreateBucket(genName(gen))
	if err != nil {
		return nil, fmt.Errorf("create generation %d: %w", gen, err)
	}
	g := &generation{b: b}
	if g.items, err = b.CreateBucket(itemsBucket); err != nil {
		return nil, err
	}
	if g.blobs, err = b.CreateBucket(blobsBucket); err != nil {
		return nil, err
	}
	g.blobs.FillPercent = blobsFill
	if g.index, err = b.CreateBucket(indexBucket); err != nil {
		return nil, err
	}
	for _, name := range indexes {
		if _, err := g.index.CreateBucket([]byte(name)); err != nil {
			return nil, fmt.Errorf("create index bucket %q: %w", name, err)
		}
	}
	return g, nil
}

// Index keys are escaped(value) 0x00 key. The escaping keeps 0x00 out of
// the value part so that the first 0x00 always ends it: 0x00 is written as
// 0x01 0x01 and 0x01 as 0x01 0x02. Values without those bytes are stored
// as is, so the layout reads as <value>\x00<key>.

// appendIndexPrefix appends escaped(value) 0x00.
func appendIndexPrefix(dst []byte, value string) []byte {
	for i := 0; i < len(value); i++ {
		switch c := value[i]; c {
		case 0x00:
			dst = append(dst, 0x01, 0x01)
		case 0x01:
			dst = append(dst, 0x01, 0x02)
		default:
			dst = append(dst, c)
		}
	}
	return append(dst, 0x00)
}

func indexKey(value, key string) []byte {
	b := appendIndexPrefix(make([]byte, 0, len(value)+len(key)+2), value)
	return append(b, key...)
}

// splitIndexKey returns the value and object key of an index key.
func splitIndexKey(k []byte) (value, key string, err error) {
	i := bytes.IndexByte(k, 0x00)
	if i < 0 {
		return "", "", errors.New("index key without separator")
	}
	esc := k[:i]
	if bytes.IndexByte(esc, 0x01) < 0 {
		return string(esc), string(k[i+1:]), nil
	}
	v := make([]byte, 0, len(esc))
	for j := 0; j < len(esc); j++ {
		if esc[j] != 0x01 {
			v = append(v, esc[j])
			continue
		}
		if j+1 == len(esc) {
			return "", "", errors.New("index key with a dangling escape")
		}
		j++
		switch esc[j] {
		case 0x01:
			v = append(v, 0x00)
		case 0x02:
			v = append(v, 0x01)
		default:
			return "", "", errors.New("index key with an invalid escape")
		}
	}
	return string(v), string(k[i+1:]), nil
}

// Reverse entries map index name to the (deduplicated, sorted) values the
// object is filed under, as a msgpack map of str to array of str with the
// names in order; indexes with no value are left out, and an object with no
// value at all has an empty reverse entry. Like the envelope they are
// encoded by hand: they are written and read for every write.

// appendReverse appends the reverse entry of values to dst; nothing when
// no index has a value (values may be nil).
func appendReverse(dst []byte, names []string, values [][]string) []byte {
	if values == nil {
		return dst
	}
	n, size := 0, 5
	for i, name := range names {
		if len(values[i]) > 0 {
			n++
			size += len(name) + 10
			for _, v := range values[i] {
				size += len(v) + 5
			}
		}
	}
	if n == 0 {
		return dst
	}
	b := appendLen(slices.Grow(dst, size), n, 0x80, 0xde, 0xdf)
	for i, name := range names {
		if len(values[i]) == 0 {
			continue
		}
		b = appendStr(b, name)
		b = appendLen(b, len(values[i]), 0x90, 0xdc, 0xdd)
		for _, v := range values[i] {
			b = appendStr(b, v)
		}
	}
	return b
}

// appendLen appends a msgpack map or array header: fix (n < 16), 16-bit or
// 32-bit.
func appendLen(b []byte, n int, fix, tag16, tag32 byte) []byte {
	switch {
	case n < 16:
		return append(b, fix|byte(n))
	case n < 1<<16:
		return append(b, tag16, byte(n>>8), byte(n))
	}
	return append(b, tag32, byte(n>>24), byte(n>>16), byte(n>>8), byte(n))
}

// readLen reads a map or array header written by appendLen.
func readLen(p []byte, fix, tag16, tag32 byte) (int, []byte, error) {
	switch {
	case len(p) == 0:
		return 0, nil, errors.New("truncated")
	case p[0]&0xf0 == fix:
		return int(p[0] & 0x0f), p[1:], nil
	case p[0] == tag16 && len(p) >= 3:
		return int(binary.BigEndian.Uint16(p[1:])), p[3:], nil
	case p[0] == tag32 && len(p) >= 5:
		return int(binary.BigEndian.Uint32(p[1:])), p[5:], nil
	}
	return 0, nil, fmt.Errorf("unexpected msgpack tag 0x%02x", p[0])
}

func decodeReverse(b []byte) (map[string][]string, error) {
	if len(b) == 0 {
		return nil, nil
	}
	fail := func(err error) (map[string][]string, error) {
		return nil, fmt.Errorf("decode reverse entry: %w", err)
	}
	n, p, err := readLen(b, 0x80, 0xde, 0xdf)
	if err != nil {
		return fail(err)
	}
	if n > len(p) {
		return fail(errors.New("map length exceeds the data"))
	}
	m := make(map[string][]string, n)
	for range n {
		var name []byte
		if name, p, err = readRaw(p, false); err != nil {
			return fail(err)
		}
		var k int
		if k, p, err = readLen(p, 0x90, 0xdc, 0xdd); err != nil {
			return fail(err)
		}
		if k > len(p) {
			return fail(errors.New("array length exceeds the data"))
		}
		vs := make([]string, k)
		for i := range vs {
			var v []byte
			if v, p, err = readRaw(p, false); err != nil {
				return fail(err)
			}
			vs[i] = string(v)
		}
		m[string(name)] = vs
	}
	if len(p) != 0 {
		return fail(fmt.Errorf("%d trailing bytes", len(p)))
	}
	return m, nil
}
