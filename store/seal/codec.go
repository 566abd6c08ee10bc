package seal

import (
	"encoding/hex"
	"fmt"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/warmcache/warmcache/store/codec"
)

// A sealed payload is
//
//	format  1 byte, formatV1: AES-256-GCM, random 96-bit nonce
//	key ID  IDSize bytes, the ID of the key that sealed it
//	nonce   12 bytes
//	sealed  the inner codec's encoding, encrypted, and its 16-byte tag
//
// The AEAD's additional data is the format byte and key ID followed by the
// item's additional data (codec.Bound: resource, key, resourceVersion,
// UID), so that neither the header nor the place of the payload can be
// changed without the payload failing to open.
const (
	formatV1   byte = 0xa1 // no inner codec's first byte (0x01-0x03)
	headerSize      = 1 + IDSize
	nonceSize       = 12
	tagSize         = 16
	// Overhead is the number of bytes sealing adds to a payload.
	Overhead = headerSize + nonceSize + tagSize
)

// NamePrefix starts the name of every sealed codec: the recorded codec
// name of a sealed resource is NamePrefix + the inner codec's name.
const NamePrefix = "sealed-aes256gcm+"

// InnerName returns the inner codec's name of a sealed codec's name, and
// whether name is a sealed codec's.
func InnerName(name string) (string, bool) { return strings.CutPrefix(name, NamePrefix) }

// Codec seals the payloads of an inner codec with AES-256-GCM (it
// implements codec.Bound). New payloads are sealed with the first key;
// payloads sealed with any of its keys open. Its name is NamePrefix + the
// inner codec's name, so a resource recorded in plaintext and opened
// sealed, or the reverse, is discarded and relisted, never misread.
//
// A Codec is safe for concurrent use.
type Codec struct {
	inner codec.Codec
	write Key
	keys  map[[IDSize]byte]Key
	ids   []string
}

var _ codec.Bound = (*Codec)(nil)

// NewCodec returns inner sealed with keys, the first of which seals new
// writes. keys must hold at least one valid key.
func NewCodec(inner codec.Codec, keys []Key) (*Codec, error) {
	if inner == nil {
		return nil, fmt.Errorf("seal: codec: %w: nil inner codec", ErrInvalidKey)
	}
	keys, err := checkKeys("codec "+inner.Name(), keys)
	if err != nil {
		return nil, err
	}
	c := &Codec{inner: inner, write: keys[0], keys: make(map[[IDSize]byte]Key, len(keys)), ids: KeyIDs(keys)}
	for _, k := range keys {
		c.keys[k.id] = k
	}
	return c, nil
}

// Name implements codec.Codec.
func (c *Codec) Name() string { return NamePrefix + c.inner.Name() }

// KeyIDs returns the IDs of the codec's keys, the sealing key first.
func (c *Codec) KeyIDs() []string { return append([]string(nil), c.ids...) }

// Encode implements codec.Codec; it always fails with ErrUnbound.
func (c *Codec) Encode([]byte, runtime.Object) ([]byte, error) {
	return nil, fmt.Errorf("seal: encode: %w", ErrUnbound)
}

// Decode implements codec.Codec; it always fails with ErrUnbound.
func (c *Codec) Decode([]byte) (runtime.Object, error) {
	return nil, fmt.Errorf("seal: decode: %w", ErrUnbound)
}

// scratch holds the buffers of one seal or open: the plaintext, cleared
// before it is reused, and the AEAD's full additional data. Pooling both
// keeps sealing and opening free of allocations beyond the inner codec's.
type scratch struct{ plain, ad []byte }

var scratchPool = sync.Pool{New: func() any {
	return &scratch{plain: make([]byte, 0, 4096), ad: make([]byte, 0, 256)}
}}

// fullAD sets s.ad to the AEAD's additional data, the payload header then
// the item's, and returns it.
func (s *scratch) fullAD(hdr, ad []byte) []byte {
	s.ad = append(append(s.ad[:0], hdr...), ad...)
	return s.ad
}

// release clears plain, the plaintext made in s.plain (nil when opening
// failed), and returns s to the pool, keeping plain's buffer unless it grew
// beyond 1 MiB.
func (s *scratch) release(plain []byte) {
	clear(plain)
	if plain != nil && cap(plain) <= 1<<20 {
		s.plain = plain[:0]
	}
	if cap(s.ad) > 1<<16 {
		s.ad = nil
	}
	scratchPool.Put(s)
}

// RetainsNothing reports that EncodeBound keeps neither dst nor its result
// (codec.RetainsNothing): the store may recycle them.
func (c *Codec) RetainsNothing() bool { return true }

// EncodeBound implements codec.Bound: it appends obj's inner encoding,
// sealed with the first key and bound to ad, to dst.
func (c *Codec) EncodeBound(dst []byte, obj runtime.Object, ad []byte) ([]byte, error) {
	s := scratchPool.Get().(*scratch)
	plain, err := c.inner.Encode(s.plain[:0], obj)
	defer s.release(plain)
	if err != nil {
		return nil, err
	}
	start := len(dst)
	dst = append(dst, formatV1)
	dst = append(dst, c.write.id[:]...)
	return c.write.aead.Seal(dst, nil, plain, s.fullAD(dst[start:], ad)), nil
}

// DecodeBound implements codec.Bound: it opens data with the key its
// header names, bound to ad, and decodes it with the inner codec. A key
// the codec does not hold returns an error wrapping ErrUnknownKey; data
// that does not authenticate, ErrOpen.
func (c *Codec) DecodeBound(data, ad []byte) (runtime.Object, error) {
	k, err := c.keyOf(data)
	if err != nil {
		return nil, err
	}
	s := scratchPool.Get().(*scratch)
	plain, err := k.aead.Open(s.plain[:0], nil, data[headerSize:], s.fullAD(data[:headerSize], ad))
	defer s.release(plain)
	if err != nil {
		return nil, fmt.Errorf("seal: key %s: %w", k.ID(), ErrOpen)
	}
	return c.inner.Decode(plain)
}

// CheckKey reports whether data was sealed with the codec's sealing key
// (current), or an error wrapping ErrUnknownKey or ErrFormat when no key
// of the codec can open it. It reads the header only.
func (c *Codec) CheckKey(data []byte) (current bool, err error) {
	k, err := c.keyOf(data)
	if err != nil {
		return false, err
	}
	return k.id == c.write.id, nil
}

func (c *Codec) keyOf(data []byte) (Key, error) {
	id, err := header(data)
	if err != nil {
		return Key{}, err
	}
	k, ok := c.keys[id]
	if !ok {
		return Key{}, fmt.Errorf("seal: %w: key %s (configured: %s)", ErrUnknownKey, hex.EncodeToString(id[:]), strings.Join(c.ids, ", "))
	}
	return k, nil
}

// KeyIDOf returns the ID of the key that sealed data, read from its
// header without any key: what a tool shows of a sealed payload.
func KeyIDOf(data []byte) (string, error) {
	id, err := header(data)
	if err != nil {
		return "", err
	}
	return hex.EncodeToString(id[:]), nil
}

func header(data []byte) ([IDSize]byte, error) {
	var id [IDSize]byte
	if len(data) < headerSize+nonceSize+tagSize {
		return id, fmt.Errorf("seal: %w: %d bytes", ErrFormat, len(data))
	}
	if data[0] != formatV1 {
		return id, fmt.Errorf("seal: %w: format byte 0x%02x", ErrFormat, data[0])
	}
	copy(id[:], data[1:headerSize])
	return id, nil
}
