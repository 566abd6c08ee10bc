package layout

// ItemAD returns the additional data a Bound codec (package store/codec)
// binds an item's payload to: the resource's bucket name, the item's key
// and the envelope's resourceVersion and UID, each as a msgpack str so
// that no two distinct tuples share an encoding. A sealed payload copied
// to another resource or key, or under another resourceVersion or UID in
// its envelope, then fails to decode instead of being served.
func ItemAD(bucket, key, rv, uid string) []byte {
	dst := make([]byte, 0, len(bucket)+len(key)+len(rv)+len(uid)+20)
	for _, s := range [...]string{bucket, key, rv, uid} {
		dst = AppendStr(dst, s)
	}
	return dst
}
