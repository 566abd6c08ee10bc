package layout

import (
	"encoding/binary"
	"math"
)

// Every write transaction of a store records its resource's meta (the
// resourceVersion of invariant 1 among it), so the meta is encoded by hand
// like envelopes and reverse entries, without msgpack's reflection: a
// tenth of the CPU of a transaction of one object went to msgpack.Marshal.
// appendMeta writes the bytes msgpack.Marshal writes for a Meta (a map of
// the fields by their tag names, in declaration order, omitempty fields
// left out when empty, int as msgpack's smallest integer, int64 and uint64
// as 9-byte ones, a nil slice as nil), which TestAppendMetaIsMsgpack
// checks, so that files and tools see no difference.

// msgpack tags appendMeta writes beyond those of envelope.go.
const (
	mpNil    = 0xc0
	mpFalse  = 0xc2
	mpTrue   = 0xc3
	mpUint8  = 0xcc
	mpUint16 = 0xcd
	mpUint64 = 0xcf
	mpInt8   = 0xd0
	mpInt16  = 0xd1
	mpInt32  = 0xd2
	mpInt64  = 0xd3
	mpMap16  = 0xde
	mpMap32  = 0xdf
	mpArr16  = 0xdc
	mpArr32  = 0xdd
)

// appendMeta appends the msgpack encoding of m to dst.
func appendMeta(dst []byte, m *Meta) []byte {
	n := 16 // the fields without omitempty
	if m.TypeHash != "" {
		n++
	}
	if m.Reason != "" {
		n++
	}
	dst = appendLen(dst, n, 0x80, mpMap16, mpMap32)
	dst = appendInt(AppendStr(dst, "schema"), int64(m.Schema))
	dst = appendIdentity(AppendStr(dst, "identity"), &m.Identity)
	dst = AppendStr(AppendStr(dst, "codec"), m.Codec)
	if m.TypeHash != "" {
		dst = AppendStr(AppendStr(dst, "typeHash"), m.TypeHash)
	}
	dst = AppendStr(dst, "indexes")
	if m.Indexes == nil {
		dst = append(dst, mpNil)
	} else {
		dst = appendLen(dst, len(m.Indexes), 0x90, mpArr16, mpArr32)
		for _, s := range m.Indexes {
			dst = AppendStr(dst, s)
		}
	}
	dst = AppendStr(AppendStr(dst, "indexVersion"), m.IndexVersion)
	dst = appendBool(AppendStr(dst, "indexBuild"), m.IndexBuild)
	dst = AppendStr(AppendStr(dst, "rv"), m.RV)
	dst = AppendStr(AppendStr(dst, "state"), string(m.State))
	if m.Reason != "" {
		dst = AppendStr(AppendStr(dst, "reason"), m.Reason)
	}
	dst = appendInt64(AppendStr(dst, "objects"), m.Objects)
	dst = appendUint64(AppendStr(dst, "staging"), m.Staging)
	dst = appendUint64(AppendStr(dst, "nextGen"), m.NextGen)
	dst = appendInt64(AppendStr(dst, "created"), m.Created)
	dst = appendInt64(AppendStr(dst, "updated"), m.Updated)
	dst = appendInt64(AppendStr(dst, "relisted"), m.Relisted)
	dst = AppendStr(AppendStr(dst, "cluster"), m.Cluster)
	return AppendStr(AppendStr(dst, "transformVersion"), m.TransformVersion)
}

// appendIdentity appends id as its record (Identity.EncodeMsgpack).
func appendIdentity(dst []byte, id *Identity) []byte {
	dst = append(dst, 0x80|8)
	for _, kv := range [...][2]string{
		{"group", id.Group}, {"version", id.Version}, {"resource", id.Resource}, {"kind", id.Kind},
		{"namespace", id.Namespace}, {"labelSelector", id.LabelSelector},
		{"fieldSelector", id.FieldSelector}, {"shard", id.Shard},
	} {
		dst = AppendStr(AppendStr(dst, kv[0]), kv[1])
	}
	return dst
}

func appendBool(dst []byte, v bool) []byte {
	if v {
		return append(dst, mpTrue)
	}
	return append(dst, mpFalse)
}

// appendInt appends n in the fewest bytes (msgpack's EncodeInt).
func appendInt(dst []byte, n int64) []byte {
	switch {
	case n >= 0 && n <= math.MaxInt8, n < 0 && n >= -32:
		return append(dst, byte(n))
	case n >= 0 && n <= math.MaxUint8:
		return append(dst, mpUint8, byte(n))
	case n >= 0 && n <= math.MaxUint16:
		return binary.BigEndian.AppendUint16(append(dst, mpUint16), uint16(n))
	case n >= 0 && n <= math.MaxUint32:
		return binary.BigEndian.AppendUint32(append(dst, mpUint32), uint32(n))
	case n >= 0:
		return appendUint64(dst, uint64(n))
	case n >= math.MinInt8:
		return append(dst, mpInt8, byte(n))
	case n >= math.MinInt16:
		return binary.BigEndian.AppendUint16(append(dst, mpInt16), uint16(n))
	case n >= math.MinInt32:
		return binary.BigEndian.AppendUint32(append(dst, mpInt32), uint32(n))
	}
	return appendInt64(dst, n)
}

func appendInt64(dst []byte, n int64) []byte {
	return binary.BigEndian.AppendUint64(append(dst, mpInt64), uint64(n))
}

func appendUint64(dst []byte, n uint64) []byte {
	return binary.BigEndian.AppendUint64(append(dst, mpUint64), n)
}
