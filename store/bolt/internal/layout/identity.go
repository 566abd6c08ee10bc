package layout

import (
	"net/url"
	"strings"
)

// Identity is a resource's identity as recorded in its meta. It has the
// fields of package bolt's Identity, which converts to and from it.
type Identity struct {
	Group         string `msgpack:"group"`
	Version       string `msgpack:"version"`
	Resource      string `msgpack:"resource"`
	Kind          string `msgpack:"kind"`
	Namespace     string `msgpack:"namespace"`
	LabelSelector string `msgpack:"labelSelector"`
	FieldSelector string `msgpack:"fieldSelector"`
	Shard         string `msgpack:"shard"`
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
