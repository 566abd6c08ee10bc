package layout

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

// File layout (see package bolt's doc.go for the prose):
//
//	warmcache                      format marker bucket
//	  format -> msgpack FileFormat
//	res;g=..;v=..;r=..;...         one bucket per resource (Identity.String)
//	  meta   -> msgpack Meta
//	  live   -> 8-byte big-endian Generation number
//	  gen/                         generations of the content
//	    <8-byte gen>/
//	      items/    key -> 8-byte blob id + select part (namespace unless
//	                       the key names it, labels) + reverse entry
//	                       (msgpack map index name -> values; empty
//	                       without values)
//	      blobs/    8-byte blob id -> envelope [rv, uid, payload]
//	      index/
//	        <name>/ escaped(value) 0x00 key -> empty (the name encoded
//	                as an item key, see IndexBucketName)
//
// Envelopes live apart from the keys so that a write in watch order (keys
// spread over the key space) rewrites a leaf of small item entries and
// appends its envelope, instead of rewriting a leaf of neighbouring
// envelopes: at 100k pods that halves the bytes a random add writes. A
// blob id is the blobs bucket's sequence when the item was added, and an
// update rewrites the envelope under the same id.

// A Replace stages a new Generation and Commit moves the live pointer to it
// in one transaction; the old Generation is deleted afterwards.

// Versions of what package bolt writes.
const (
	// FormatVersion is the version of the file layout.
	FormatVersion = 1
	// SchemaVersion is the version of a resource's layout and encodings
	// (item entries, envelopes, reverse entries, index keys). A resource
	// recorded with another schema version is discarded (and relisted by
	// its informer). Version 1 kept envelopes in the items bucket and
	// reverse entries in their own; version 2 stored object keys as they
	// are and so could not hold the empty key (see EncodeItemKey);
	// version 3 had no select part in item entries (see
	// AppendSelectPart), so a selection decoded every object; version 4
	// recorded neither the cluster nor the transform version in Meta;
	// version 5 had no checksums (see checksum.go), so a damaged byte
	// inside a stored value was served; version 6 named index buckets by
	// the index name as it is, and so could not hold an index named ""
	// (see IndexBucketName), and stored every index value in its keys,
	// and so could not index a value longer than bbolt's key limit (see
	// AppendIndexPrefix).
	SchemaVersion = 7
	// Magic marks a warmcache file.
	Magic = "warmcache"
)

// Names of the buckets and keys of the layout.
var (
	MarkerBucket = []byte("warmcache")
	FormatKey    = []byte("format")
	MetaKey      = []byte("meta")
	LiveKey      = []byte("live")
	GenBucket    = []byte("gen")
	ItemsBucket  = []byte("items")
	BlobsBucket  = []byte("blobs")
	IndexBucket  = []byte("index")
)

// FileFormat is the value of warmcache/format.
type FileFormat struct {
	Magic   string `msgpack:"magic"`
	Version int    `msgpack:"version"`
	Created int64  `msgpack:"created"` // unix nanoseconds
}

// State is the recorded health of a resource's data.
type State string

const (
	// StateNew: no Replace was ever committed; the items (if any) are
	// incremental changes only.
	StateNew State = "new"
	// StateComplete: the items are a complete picture of the server at
	// the recorded resourceVersion.
	StateComplete State = "complete"
	// StateIncomplete: the items were complete once but something was
	// lost since (an item that does not decode); a relist is needed.
	StateIncomplete State = "incomplete"
	// StateFilling: a fill (Store.BeginFill) wrote the items in place
	// and has not committed, or was aborted and no Replace committed
	// since. The items are partial; an open discards them.
	StateFilling State = "filling"
)

// Meta is the value of <resource>/meta. Fields are encoded by name,
// so that tools can read it.
type Meta struct {
	Schema       int      `msgpack:"schema"`
	Identity     Identity `msgpack:"identity"`
	Codec        string   `msgpack:"codec"`
	TypeHash     string   `msgpack:"typeHash,omitempty"` // typeFingerprint of the decoded type
	Indexes      []string `msgpack:"indexes"`            // sorted
	IndexVersion string   `msgpack:"indexVersion"`
	IndexBuild   bool     `msgpack:"indexBuild"` // an index rebuild is under way
	RV           string   `msgpack:"rv"`
	State        State    `msgpack:"state"`
	Reason       string   `msgpack:"reason,omitempty"` // why incomplete
	Objects      int64    `msgpack:"objects"`
	Staging      uint64   `msgpack:"staging"` // Generation of an open Replace, 0 if none
	NextGen      uint64   `msgpack:"nextGen"`
	Created      int64    `msgpack:"created"`  // unix nanoseconds
	Updated      int64    `msgpack:"updated"`  // last write
	Relisted     int64    `msgpack:"relisted"` // last committed Replace

	// Cluster identifies the cluster the data came from (package bolt's
	// ResourceOptions.Cluster); TransformVersion the transform that shaped
	// the stored objects. Either differing discards the data.
	Cluster          string `msgpack:"cluster"`
	TransformVersion string `msgpack:"transformVersion"`
}

// Clone returns a copy of m that shares no memory with it.
func (m *Meta) Clone() Meta {
	c := *m
	c.Indexes = slices.Clone(m.Indexes)
	return c
}

// EncodeMeta encodes m: the msgpack map of its fields followed by its
// checksum, a msgpack uint32 (so the value reads as two msgpack objects).
func EncodeMeta(m *Meta) ([]byte, error) {
	b := appendMeta(make([]byte, 0, metaSizeHint(m)), m)
	return appendSum(append(b, mpUint32), 0, nil), nil
}

// metaSizeHint is about the size of m's encoding: its names and fixed
// fields (about 330 bytes), its strings and its checksum.
func metaSizeHint(m *Meta) int {
	n := 400 + len(m.Identity.Group) + len(m.Identity.Version) + len(m.Identity.Resource) + len(m.Identity.Kind) +
		len(m.Identity.Namespace) + len(m.Identity.LabelSelector) + len(m.Identity.FieldSelector) + len(m.Identity.Shard) +
		len(m.Codec) + len(m.TypeHash) + len(m.IndexVersion) + len(m.RV) + len(m.State) + len(m.Reason) +
		len(m.Cluster) + len(m.TransformVersion)
	for _, s := range m.Indexes {
		n += len(s) + 5
	}
	return n
}

// checksumSchema is the first schema version whose meta has a checksum.
const checksumSchema = 6

// DecodeMeta decodes the value of a resource's meta key and verifies its
// checksum. A meta of a schema version before checksums (which has none)
// decodes with its Schema, for the caller to discard the resource for
// it; a meta that claims a later version without a valid checksum is an
// error matching ErrChecksum.
func DecodeMeta(b []byte) (Meta, error) {
	var m Meta
	n := len(b)
	if n > envelopeSumLen && b[n-envelopeSumLen] == mpUint32 {
		body, err := checkSum(PartMeta, nil, b)
		if err == nil {
			if err := decodeAll(body[:len(body)-1], &m); err != nil {
				return Meta{}, fmt.Errorf("decode resource meta: %w", err)
			}
			return m, nil
		}
		if decodeAll(b, &m) != nil || m.Schema >= checksumSchema {
			return Meta{}, fmt.Errorf("decode resource meta: %w", err)
		}
		return m, nil // an older meta that happens to end like a checksum
	}
	if err := decodeAll(b, &m); err != nil {
		return Meta{}, fmt.Errorf("decode resource meta: %w", err)
	}
	if m.Schema >= checksumSchema {
		return Meta{}, fmt.Errorf("decode resource meta: %w", &ChecksumError{Part: PartMeta, Missing: fmt.Sprintf("schema version %d", m.Schema)})
	}
	return m, nil
}

// decodeAll decodes b into v and fails unless that reads all of b.
func decodeAll(b []byte, v any) error {
	r := bytes.NewReader(b)
	if err := msgpack.NewDecoder(r).Decode(v); err != nil {
		return err
	}
	if r.Len() != 0 {
		return fmt.Errorf("%d trailing bytes", r.Len())
	}
	return nil
}

// PutMeta stamps m with the time of this write and stores it in res.
func PutMeta(res *bbolt.Bucket, m *Meta) error {
	m.Updated = time.Now().UnixNano()
	b, err := EncodeMeta(m)
	if err != nil {
		return err
	}
	return res.Put(MetaKey, b)
}

// GenName is the bucket name of generation gen.
func GenName(gen uint64) []byte {
	return binary.BigEndian.AppendUint64(nil, gen)
}

// LiveValue is the value of the live key for generation gen: its number
// and a checksum.
func LiveValue(gen uint64) []byte {
	return appendSum(GenName(gen), 0, LiveKey)
}

// LiveGen returns the live generation number recorded in res, after
// verifying its checksum.
func LiveGen(res *bbolt.Bucket) (uint64, error) {
	v := res.Get(LiveKey)
	if len(v) != 8+SumLen {
		return 0, errors.New("live Generation pointer missing or malformed")
	}
	b, err := checkSum(PartLive, LiveKey, v)
	if err != nil {
		return 0, fmt.Errorf("live Generation pointer: %w", err)
	}
	return binary.BigEndian.Uint64(b), nil
}

// Generation is the set of buckets of one Generation of a resource's
// content, open in one transaction: valid only while it lasts.
type Generation struct {
	B     *bbolt.Bucket
	Items ItemBucket
	Blobs *bbolt.Bucket
	Index *bbolt.Bucket
}

// BlobsFill is the fill percent of the blobs bucket's pages: envelopes are
// appended in id order, so full pages stay full (bbolt's default of half
// suits keys inserted anywhere).
const BlobsFill = 0.9

// OpenGeneration returns Generation gen of res, or an error if a bucket is
// missing.
func OpenGeneration(res *bbolt.Bucket, gen uint64) (*Generation, error) {
	gens := res.Bucket(GenBucket)
	if gens == nil {
		return nil, errors.New("generations bucket missing")
	}
	g := &Generation{B: gens.Bucket(GenName(gen))}
	if g.B == nil {
		return nil, fmt.Errorf("Generation %d missing", gen)
	}
	g.Items.B, g.Blobs, g.Index = g.B.Bucket(ItemsBucket), g.B.Bucket(BlobsBucket), g.B.Bucket(IndexBucket)
	if g.Items.B == nil || g.Blobs == nil || g.Index == nil {
		return nil, fmt.Errorf("Generation %d is missing a bucket", gen)
	}
	g.Blobs.FillPercent = BlobsFill
	return g, nil
}

// OpenLive returns the live Generation of res.
func OpenLive(res *bbolt.Bucket) (*Generation, error) {
	gen, err := LiveGen(res)
	if err != nil {
		return nil, err
	}
	return OpenGeneration(res, gen)
}

// CreateGeneration creates Generation gen of res with an index bucket per
// name. It fails if it exists.
func CreateGeneration(res *bbolt.Bucket, gen uint64, indexes []string) (*Generation, error) {
	gens, err := res.CreateBucketIfNotExists(GenBucket)
	if err != nil {
		return nil, err
	}
	b, err := gens.CreateBucket(GenName(gen))
	if err != nil {
		return nil, fmt.Errorf("create Generation %d: %w", gen, err)
	}
	g := &Generation{B: b}
	if g.Items.B, err = b.CreateBucket(ItemsBucket); err != nil {
		return nil, err
	}
	if g.Blobs, err = b.CreateBucket(BlobsBucket); err != nil {
		return nil, err
	}
	g.Blobs.FillPercent = BlobsFill
	if g.Index, err = b.CreateBucket(IndexBucket); err != nil {
		return nil, err
	}
	for _, name := range indexes {
		if _, err := g.Index.CreateBucket(IndexBucketName(name)); err != nil {
			return nil, fmt.Errorf("create index bucket %q: %w", name, err)
		}
	}
	return g, nil
}

// Reverse entries map index name to the (deduplicated, sorted) values the
// object is filed under, as a msgpack map of str to array of str with the
// names in order; indexes with no value are left out, and an object with no
// value at all has an empty reverse entry. Like the envelope they are
// encoded by hand: they are written and read for every write.

// AppendReverse appends the reverse entry of values to dst; nothing when
// no index has a value (values may be nil).
func AppendReverse(dst []byte, names []string, values [][]string) []byte {
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
		b = AppendStr(b, name)
		b = appendLen(b, len(values[i]), 0x90, 0xdc, 0xdd)
		for _, v := range values[i] {
			b = AppendStr(b, v)
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

// DecodeReverse decodes a reverse entry: index name to the values the
// object is filed under (nil for an empty entry). The strings are copies.
func DecodeReverse(b []byte) (map[string][]string, error) {
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
		if name, p, err = ReadRaw(p, false); err != nil {
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
			if v, p, err = ReadRaw(p, false); err != nil {
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
