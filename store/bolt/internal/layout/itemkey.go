package layout

import bbolt "go.etcd.io/bbolt"

// Item keys. bbolt refuses an empty key, but client-go's stores (and
// warmcache's memory store) accept the empty string as an object key, so
// the items bucket stores an object key k as:
//
//	0x00 k   if k is empty or starts with 0x00
//	k        otherwise
//
// The encoding is one-to-one and keeps the order of keys (the empty key
// is 0x00, below every other; keys starting with 0x00 follow it, before
// any key starting with 0x01 or above), so scans, seeks and the merge-walk
// of a relist see keys in the order they would as raw bytes. Keys that
// are not empty and do not start with 0x00 (every Kubernetes key) are
// stored as they are, without copying. Schema version 2 stored keys raw
// and refused the empty key. Index keys need no such encoding: an index
// key is never empty (it holds the 0x00 that ends the value).

// EncodeItemKey returns the items bucket key of object key. It aliases key
// unless key is empty or starts with 0x00.
func EncodeItemKey(key []byte) []byte {
	if len(key) > 0 && key[0] != 0x00 {
		return key
	}
	return append([]byte{0x00}, key...)
}

// DecodeItemKey returns the object key of an items bucket key, aliasing
// k; nil for nil (a cursor's end), an empty non-nil slice for the empty
// key.
func DecodeItemKey(k []byte) []byte {
	if len(k) > 0 && k[0] == 0x00 {
		return k[1:]
	}
	return k
}

// ItemBucket is a generation's items bucket, keyed by object key (see
// EncodeItemKey). Its methods are those of *bbolt.Bucket with object keys;
// values are item entries.
type ItemBucket struct {
	B *bbolt.Bucket
}

// Get returns the item entry of key, nil if there is none.
func (b ItemBucket) Get(key []byte) []byte { return b.B.Get(EncodeItemKey(key)) }

// Put sets the item entry of key.
func (b ItemBucket) Put(key, v []byte) error { return b.B.Put(EncodeItemKey(key), v) }

// Delete deletes the item entry of key, if any.
func (b ItemBucket) Delete(key []byte) error { return b.B.Delete(EncodeItemKey(key)) }

// Cursor returns a cursor over the items in object key order.
func (b ItemBucket) Cursor() ItemCursor { return ItemCursor{c: b.B.Cursor()} }

// ItemCursor is a bbolt cursor over an items bucket that returns object
// keys. Keys and values alias the transaction's memory; a nil key means
// the end, as with bbolt.
type ItemCursor struct {
	c *bbolt.Cursor
}

func decoded(k, v []byte) ([]byte, []byte) { return DecodeItemKey(k), v }

// First moves to the first item.
func (c ItemCursor) First() ([]byte, []byte) { return decoded(c.c.First()) }

// Last moves to the last item.
func (c ItemCursor) Last() ([]byte, []byte) { return decoded(c.c.Last()) }

// Next moves to the next item.
func (c ItemCursor) Next() ([]byte, []byte) { return decoded(c.c.Next()) }

// Prev moves to the previous item.
func (c ItemCursor) Prev() ([]byte, []byte) { return decoded(c.c.Prev()) }

// Seek moves to the first item whose object key is at least seek.
func (c ItemCursor) Seek(seek []byte) ([]byte, []byte) {
	return decoded(c.c.Seek(EncodeItemKey(seek)))
}

// Delete deletes the item under the cursor.
func (c ItemCursor) Delete() error { return c.c.Delete() }

// Index bucket names. bbolt refuses an empty bucket name, but client-go's
// indexers accept any string as an index name, the empty one included, so
// a generation's index bucket of index name is named by the item key
// encoding of name (0x00 name if name is empty or starts with 0x00, name
// as it is otherwise). Schema version 6 named them by name as it is and
// so could not hold an index named "".

// IndexBucketName returns the name of the index bucket of index name.
func IndexBucketName(name string) []byte { return EncodeItemKey([]byte(name)) }

// IndexNameOf returns the index name of index bucket name b.
func IndexNameOf(b []byte) string { return string(DecodeItemKey(b)) }
