package layout

import "bytes"

// Cursor is what SeekAfter needs of a cursor: a *bbolt.Cursor over an
// index bucket or an ItemCursor over an items bucket.
type Cursor interface {
	First() ([]byte, []byte)
	Next() ([]byte, []byte)
	Seek(seek []byte) ([]byte, []byte)
}

// SeekAfter positions c on the first key greater than after (the first key
// if after is nil). The empty object key, which a nil after cannot name,
// is always the first key: a chunked loop has moved past it before its
// after is set from a later key, since every chunk holds more than one.
func SeekAfter(c Cursor, after []byte) ([]byte, []byte) {
	if after == nil {
		return c.First()
	}
	k, v := c.Seek(after)
	if k != nil && bytes.Equal(k, after) {
		k, v = c.Next()
	}
	return k, v
}
