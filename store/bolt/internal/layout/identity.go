package layout

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/warmcache/warmcache/store"
)

// Identity is a resource's identity as its meta records it. Package bolt's
// Identity, which documents it, has the same fields: each converts to the
// other. It is recorded as one msgpack map of every field (record).
type Identity struct {
	Group, Version, Resource, Kind string
	store.Scope
}

// record is an Identity as the file holds it: the keys of its msgpack map.
type record struct {
	Group         string `msgpack:"group"`
	Version       string `msgpack:"version"`
	Resource      string `msgpack:"resource"`
	Kind          string `msgpack:"kind"`
	Namespace     string `msgpack:"namespace"`
	LabelSelector string `msgpack:"labelSelector"`
	FieldSelector string `msgpack:"fieldSelector"`
	Shard         string `msgpack:"shard"`
}

// String prints id's fields, as a message names a recorded identity.
func (id Identity) String() string { return fmt.Sprint(id.record()) }

// record returns id as the file holds it.
func (id Identity) record() record {
	return record{Group: id.Group, Version: id.Version, Resource: id.Resource, Kind: id.Kind,
		Namespace: id.Namespace, LabelSelector: id.LabelSelector, FieldSelector: id.FieldSelector, Shard: id.Shard}
}

// EncodeMsgpack writes id as its record.
func (id Identity) EncodeMsgpack(enc *msgpack.Encoder) error {
	return enc.Encode(id.record())
}

// DecodeMsgpack reads id from its record.
func (id *Identity) DecodeMsgpack(dec *msgpack.Decoder) error {
	var r record
	if err := dec.Decode(&r); err != nil {
		return err
	}
	*id = Identity{Group: r.Group, Version: r.Version, Resource: r.Resource, Kind: r.Kind,
		Scope: store.Scope{Namespace: r.Namespace, LabelSelector: r.LabelSelector, FieldSelector: r.FieldSelector, Shard: r.Shard}}
	return nil
}

// BucketPrefix starts the name of every resource bucket, so that resource
// buckets never collide with the format marker bucket.
const BucketPrefix = "res;"

// BucketName returns the name of id's bucket: every field, escaped, in a
// fixed order, so that distinct identities have distinct names. It does not
// canonicalise selectors.
func BucketName(id Identity) string {
	var b strings.Builder
	b.WriteString(BucketPrefix)
	for i, kv := range [...][2]string{
		{"g", id.Group}, {"v", id.Version}, {"r", id.Resource}, {"k", id.Kind},
		{"ns", id.Namespace}, {"l", id.LabelSelector}, {"f", id.FieldSelector}, {"s", id.Shard},
	} {
		if i > 0 {
			b.WriteByte(';')
		}
		b.WriteString(kv[0])
		b.WriteByte('=')
		b.WriteString(url.QueryEscape(kv[1]))
	}
	return b.String()
}

// IsResourceBucket reports whether a top-level bucket name is a resource's.
func IsResourceBucket(name []byte) bool {
	return strings.HasPrefix(string(name), BucketPrefix)
}

// StateSuffix names the state file of a cache file (see package bolt's
// SyncOnClose): path + StateSuffix.
const StateSuffix = ".state"

// StatePath returns the path of the state file of the cache file at path.
func StatePath(path string) string { return path + StateSuffix }
