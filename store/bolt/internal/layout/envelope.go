package layout

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// An item's envelope (the value of blobs/<id>) is a msgpack array of four
// elements [resourceVersion str, uid str, payload bin, checksum uint32].
// The RV and UID are readable without decoding the payload
// (ResourceVersionOf, relist diffs, Verify). The encoding is plain msgpack,
// readable by any msgpack library; it is written by hand here so that the
// payload is encoded in place (no copy) and decoded without copying it out
// of the bbolt page.
//
// The payload is always written with a bin32 header, so that its length can
// be filled in after the codec appended it. The checksum (see checksum.go)
// is the last four bytes; it covers the object key and every byte of the
// envelope before it. Schema version 5 had no checksum (a 3-element array).

// ErrEnvelope is wrapped by the errors of a malformed envelope.
var ErrEnvelope = errors.New("malformed item envelope")

const (
	mpFixArray4 = 0x94
	mpStr8      = 0xd9
	mpStr16     = 0xda
	mpStr32     = 0xdb
	mpBin8      = 0xc4
	mpBin16     = 0xc5
	mpBin32     = 0xc6
	mpUint32    = 0xce
)

// envelopeSumLen is the length of an envelope's checksum element: a
// msgpack uint32 tag and SumLen bytes.
const envelopeSumLen = 1 + SumLen

// AppendEnvelopeHeader appends the array header, rv, uid and a bin32 header
// with a zero length to dst, which must be empty (the envelope starts at
// dst[0]); it returns the buffer and the offset of the length. The caller
// appends the payload and calls FinishEnvelope.
func AppendEnvelopeHeader(dst []byte, rv, uid string) ([]byte, int) {
	dst = append(dst, mpFixArray4)
	dst = AppendStr(dst, rv)
	dst = AppendStr(dst, uid)
	dst = append(dst, mpBin32, 0, 0, 0, 0)
	return dst, len(dst) - 4
}

// FinishEnvelope fills in the payload length (the payload starts at
// lenOff+4 and ends at the end of buf) and appends the checksum of the
// envelope stored under object key key.
func FinishEnvelope(buf []byte, lenOff int, key []byte) ([]byte, error) {
	n := len(buf) - lenOff - 4
	if uint64(n) > 1<<32-1 {
		return nil, fmt.Errorf("%w: payload of %d bytes is too large", ErrEnvelope, n)
	}
	binary.BigEndian.PutUint32(buf[lenOff:], uint32(n))
	buf = append(buf, mpUint32)
	return appendSum(buf, 0, key), nil
}

// EncodeEnvelope returns a complete envelope of the object stored under
// key (used by tests and tools that hold an encoded payload already).
func EncodeEnvelope(key, rv, uid string, payload []byte) []byte {
	buf, off := AppendEnvelopeHeader(make([]byte, 0, len(rv)+len(uid)+len(payload)+32), rv, uid)
	buf = append(buf, payload...)
	buf, _ = FinishEnvelope(buf, off, []byte(key)) // cannot fail for in-memory payloads
	return buf
}

// VerifyEnvelope checks the checksum of env, the envelope of object key
// key; the error matches ErrChecksum.
func VerifyEnvelope(key, env []byte) error {
	if len(env) < envelopeSumLen || env[len(env)-envelopeSumLen] != mpUint32 {
		return &ChecksumError{Part: PartEnvelope, Missing: "no msgpack uint32 at its end"}
	}
	_, err := checkSum(PartEnvelope, key, env)
	return err
}

// SealEnvelope appends the checksum element to body, the envelope of
// object key key up to its payload: for tools and tests that assemble an
// envelope from raw parts.
func SealEnvelope(key, body []byte) []byte {
	return appendSum(append(body, mpUint32), 0, key)
}

// EnvelopeSum returns the checksum recorded in an envelope (0 for one too
// short to hold it), without verifying it: for an envelope VerifyEnvelope
// accepted, it identifies the envelope's bytes.
func EnvelopeSum(env []byte) uint32 {
	if len(env) < SumLen {
		return 0
	}
	return binary.BigEndian.Uint32(env[len(env)-SumLen:])
}

// AppendStr appends s as a msgpack str.
func AppendStr(dst []byte, s string) []byte {
	n := len(s)
	switch {
	case n < 32:
		dst = append(dst, 0xa0|byte(n))
	case n < 1<<8:
		dst = append(dst, mpStr8, byte(n))
	case n < 1<<16:
		dst = append(dst, mpStr16, byte(n>>8), byte(n))
	default:
		dst = append(dst, mpStr32, byte(n>>24), byte(n>>16), byte(n>>8), byte(n))
	}
	return append(dst, s...)
}

// Envelope is a decoded envelope. payload aliases the decoded buffer: when
// it comes from bbolt it is valid only inside the transaction.
type Envelope struct {
	RV, UID string
	Payload []byte
}

// DecodeEnvelope parses buf. rv and uid are copied; payload aliases buf.
// It checks the structure, not the checksum (see VerifyEnvelope).
func DecodeEnvelope(buf []byte) (Envelope, error) {
	rv, uid, payload, err := splitEnvelope(buf)
	if err != nil {
		return Envelope{}, err
	}
	return Envelope{RV: string(rv), UID: string(uid), Payload: payload}, nil
}

// EnvelopePayload is DecodeEnvelope's payload alone, without copying the
// resourceVersion and UID out: for a scan that reads only payloads.
func EnvelopePayload(buf []byte) ([]byte, error) {
	_, _, payload, err := splitEnvelope(buf)
	return payload, err
}

// splitEnvelope returns the fields of envelope buf, aliasing it.
func splitEnvelope(buf []byte) (rv, uid, payload []byte, err error) {
	if len(buf) < 1 || buf[0] != mpFixArray4 {
		return nil, nil, nil, fmt.Errorf("%w: not a 4-element array", ErrEnvelope)
	}
	p := buf[1:]
	if rv, p, err = ReadRaw(p, false); err != nil {
		return nil, nil, nil, fmt.Errorf("%w: resourceVersion: %w", ErrEnvelope, err)
	}
	if uid, p, err = ReadRaw(p, false); err != nil {
		return nil, nil, nil, fmt.Errorf("%w: uid: %w", ErrEnvelope, err)
	}
	if payload, p, err = ReadRaw(p, true); err != nil {
		return nil, nil, nil, fmt.Errorf("%w: payload: %w", ErrEnvelope, err)
	}
	if len(p) != envelopeSumLen || p[0] != mpUint32 {
		return nil, nil, nil, fmt.Errorf("%w: %d bytes after the payload, want a checksum", ErrEnvelope, len(p))
	}
	return rv, uid, payload, nil
}

// EnvelopeRV returns the resourceVersion of an envelope without looking at
// the rest (nor at the checksum).
func EnvelopeRV(buf []byte) (string, error) {
	rv, err := EnvelopeRVBytes(buf)
	return string(rv), err
}

// EnvelopeRVBytes is EnvelopeRV without the copy: the result aliases buf.
func EnvelopeRVBytes(buf []byte) ([]byte, error) {
	if len(buf) < 1 || buf[0] != mpFixArray4 {
		return nil, fmt.Errorf("%w: not a 4-element array", ErrEnvelope)
	}
	rv, _, err := ReadRaw(buf[1:], false)
	if err != nil {
		return nil, fmt.Errorf("%w: resourceVersion: %w", ErrEnvelope, err)
	}
	return rv, nil
}

// ReadRaw reads one str (bin when wantBin) and returns its bytes and the
// rest of p.
func ReadRaw(p []byte, wantBin bool) (data, rest []byte, err error) {
	if len(p) == 0 {
		return nil, nil, errors.New("truncated")
	}
	tag := p[0]
	var n uint64
	var hdr int
	switch {
	case !wantBin && tag&0xe0 == 0xa0:
		n, hdr = uint64(tag&0x1f), 1
	case tag == mpStr8 && !wantBin, tag == mpBin8 && wantBin:
		if len(p) < 2 {
			return nil, nil, errors.New("truncated length")
		}
		n, hdr = uint64(p[1]), 2
	case tag == mpStr16 && !wantBin, tag == mpBin16 && wantBin:
		if len(p) < 3 {
			return nil, nil, errors.New("truncated length")
		}
		n, hdr = uint64(binary.BigEndian.Uint16(p[1:])), 3
	case tag == mpStr32 && !wantBin, tag == mpBin32 && wantBin:
		if len(p) < 5 {
			return nil, nil, errors.New("truncated length")
		}
		n, hdr = uint64(binary.BigEndian.Uint32(p[1:])), 5
	default:
		return nil, nil, fmt.Errorf("unexpected msgpack tag 0x%02x", tag)
	}
	if uint64(len(p)-hdr) < n {
		return nil, nil, fmt.Errorf("length %d exceeds the %d bytes left", n, len(p)-hdr)
	}
	end := hdr + int(n)
	return p[hdr:end:end], p[end:], nil
}
