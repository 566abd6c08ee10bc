package bolt

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/warmcache/warmcache/store/bolt/internal/layout"
	"github.com/warmcache/warmcache/store/codec"
	"github.com/warmcache/warmcache/store/wire"
)

// decodeItem decodes an item's envelope and payload. v may alias a bbolt
// page; the result does not.
func (s *Store) decodeItem(key string, v []byte) (interface{}, error) {
	return s.decodeItemShared(key, v, sharedDecode{})
}

// decodeItemShared is decodeItem sharing, through sh, what the item
// encodes alike with the object sh was made with (codec.Sharing); with a
// zero sh, decodeItem.
func (s *Store) decodeItemShared(key string, v []byte, sh sharedDecode) (interface{}, error) {
	env, err := layout.DecodeEnvelope(v)
	if err != nil {
		return nil, fmt.Errorf("%w: item %q: %w", ErrCorrupt, key, err)
	}
	var obj runtime.Object
	if sh.codec != nil {
		obj, err = sh.codec.DecodeSharing(env.Payload, sh.like, sh.msg)
	} else {
		obj, err = codec.DecodeFor(s.codec, env.Payload, func() []byte { return layout.ItemAD(s.name, key, env.RV, env.UID) })
	}
	if err != nil {
		return nil, fmt.Errorf("%w: item %q: codec %s: %w", ErrCorrupt, key, s.codec.Name(), err)
	}
	return obj, nil
}

// sharedDecode is a decode sharing with like, whose protobuf message is
// msg (codec.Sharing). The zero value decodes without sharing.
type sharedDecode struct {
	codec codec.Sharing
	like  runtime.Object
	msg   []byte
}

// sharingCodec returns the store's codec if it can share: it implements
// codec.Sharing and is not Bound (a Bound codec binds each payload to its
// item).
func (s *Store) sharingCodec() (codec.Sharing, bool) {
	sh, ok := s.codec.(codec.Sharing)
	if !ok {
		return nil, false
	}
	if _, bound := s.codec.(codec.Bound); bound {
		return nil, false
	}
	return sh, true
}

// sharingWith returns the decode sharing with like, the object about to
// replace the item decoded, if the store's codec can share and like's
// message is remembered (package wire); else, or for a nil like, the
// zero sharedDecode.
func (s *Store) sharingWith(like interface{}) sharedDecode {
	if like == nil {
		return sharedDecode{}
	}
	msg, ok := wire.Peek(like)
	if !ok {
		return sharedDecode{}
	}
	return s.sharing(like, msg)
}

// sharingWithStored is sharingWith for like decoded from the envelope
// likeEnv, whose payload holds its message: the relist's changes, whose
// new objects come from the file. A malformed likeEnv gives the zero
// sharedDecode. The result aliases likeEnv, and so the read transaction,
// whose goroutine it must run in (it reads likeEnv: a fault reading the
// mapping is then recovered, see fileCheck).
func (s *Store) sharingWithStored(like interface{}, likeEnv []byte) sharedDecode {
	sh, ok := s.sharingCodec()
	if !ok || like == nil {
		return sharedDecode{}
	}
	payload, err := layout.EnvelopePayload(likeEnv)
	if err != nil {
		return sharedDecode{}
	}
	msg, err := sh.Message(payload)
	if err != nil {
		return sharedDecode{}
	}
	return s.sharing(like, msg)
}

// sharing returns the decode sharing with like, whose message is msg, if
// the store's codec can share and like is a runtime.Object.
func (s *Store) sharing(like interface{}, msg []byte) sharedDecode {
	sh, ok := s.sharingCodec()
	if !ok {
		return sharedDecode{}
	}
	ro, ok := like.(runtime.Object)
	if !ok {
		return sharedDecode{}
	}
	return sharedDecode{codec: sh, like: ro, msg: msg}
}
