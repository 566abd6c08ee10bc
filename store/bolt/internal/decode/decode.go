// Package decode turns an item's stored envelope back into its object: the
// envelope is checked and opened (package layout), its payload decoded with
// the resource's codec, bound to the item when the codec is a codec.Bound.
// A decode may share with another object of the resource what the two
// encode alike (codec.Sharing): a relist and the informer's reads of old
// objects share with the object about to replace the item, to keep an
// unchanged field's value once in memory, and a bulk read filling the hot
// tier with the object it decoded last.
//
// Every error wraps store.ErrCorrupt and names the item's key. The bytes
// decoded may alias a bbolt page; the objects returned never do.
package decode

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/warmcache/warmcache/store"
	"github.com/warmcache/warmcache/store/bolt/internal/layout"
	"github.com/warmcache/warmcache/store/codec"
	"github.com/warmcache/warmcache/store/wire"
)

// Item decodes the envelope v of the item key of resource (the resource's
// bucket name, bound to the payload by a codec.Bound) with c, sharing
// through sh what the item encodes alike with the object sh was made with;
// with a zero sh, without sharing. v may alias a bbolt page; the result
// does not.
func Item(c codec.Codec, resource, key string, v []byte, sh Shared) (interface{}, error) {
	env, err := layout.DecodeEnvelope(v)
	if err != nil {
		return nil, fmt.Errorf("%w: item %q: %w", store.ErrCorrupt, key, err)
	}
	var obj runtime.Object
	if sh.codec != nil {
		obj, err = sh.codec.DecodeSharing(env.Payload, sh.like, sh.msg)
	} else {
		obj, err = codec.DecodeFor(c, env.Payload, func() []byte { return layout.ItemAD(resource, key, env.RV, env.UID) })
	}
	if err != nil {
		return nil, fmt.Errorf("%w: item %q: codec %s: %w", store.ErrCorrupt, key, c.Name(), err)
	}
	return obj, nil
}

// Shared is a decode sharing with like, whose protobuf message is msg
// (codec.Sharing). The zero value decodes without sharing.
type Shared struct {
	codec codec.Sharing
	like  runtime.Object
	msg   []byte
}

// IsZero reports whether sh decodes without sharing.
func (sh Shared) IsZero() bool { return sh.codec == nil }

// sharingCodec returns c if it can share: it implements codec.Sharing and
// is not Bound (a Bound codec binds each payload to its item).
func sharingCodec(c codec.Codec) (codec.Sharing, bool) {
	sh, ok := c.(codec.Sharing)
	if !ok {
		return nil, false
	}
	if _, bound := c.(codec.Bound); bound {
		return nil, false
	}
	return sh, true
}

// SharingWith returns the decode sharing with like, the object about to
// replace the item decoded, if c can share and like's message is
// remembered (package wire); else, or for a nil like, the zero Shared.
func SharingWith(c codec.Codec, like interface{}) Shared {
	if like == nil {
		return Shared{}
	}
	msg, ok := wire.Peek(like)
	if !ok {
		return Shared{}
	}
	return sharing(c, like, msg)
}

// SharingWithStored is SharingWith for like decoded from the envelope
// likeEnv, whose payload holds its message: the relist's changes, whose
// new objects come from the file, and the objects a bulk read decodes for
// the hot tier. A malformed likeEnv gives the zero Shared. The result
// aliases likeEnv, and so the read transaction. It reads likeEnv, so it
// must run where a fault reading the mapping is recovered: in the
// transaction's goroutine, or under debug.SetPanicOnFault with a recover
// (the bolt store's decoding workers).
func SharingWithStored(c codec.Codec, like interface{}, likeEnv []byte) Shared {
	sh, ok := sharingCodec(c)
	if !ok || like == nil {
		return Shared{}
	}
	payload, err := layout.EnvelopePayload(likeEnv)
	if err != nil {
		return Shared{}
	}
	msg, err := sh.Message(payload)
	if err != nil {
		return Shared{}
	}
	return sharing(c, like, msg)
}

// sharing returns the decode sharing with like, whose message is msg, if
// c can share and like is a runtime.Object.
func sharing(c codec.Codec, like interface{}, msg []byte) Shared {
	sh, ok := sharingCodec(c)
	if !ok {
		return Shared{}
	}
	ro, ok := like.(runtime.Object)
	if !ok {
		return Shared{}
	}
	return Shared{codec: sh, like: ro, msg: msg}
}
