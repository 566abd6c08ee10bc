// Package wire remembers the protobuf message an object was decoded from,
// so that a store writing the object can store those bytes instead of
// encoding the object again: the encoding a store does for every object an
// informer receives is then a copy.
//
// The factory's REST clients Remember each typed object they decode from a
// watch or a WatchList stream in Kubernetes' protobuf encoding; the
// Protobuf codec (store/codec) Takes the bytes when it encodes that very
// object. The contract that keeps this exact:
//
//   - the bytes are the object's message as the server sent it, and were
//     decoded into the object by the type's generated Unmarshal: decoding
//     them again gives an equal object (fields unknown to this client's
//     types are kept in the bytes and skipped by every decode);
//   - whoever changes a remembered object before it is stored must Forget
//     it first: the informer does so before its transform runs, which is
//     the only change the pipeline makes to an object;
//   - Take forgets what it returns: the bytes serve the first encoding
//     only, so an object changed after it was stored (a handler must not,
//     but one that does and writes it back) is encoded from its fields.
//
// The informer forgets the objects of each batch once it has handled it,
// so a store that does not encode (memory) keeps no message alive; an
// object that never reaches the informer is forgotten when the garbage
// collector frees it. The registry holds weak references only: it never
// keeps an object alive.
package wire

import (
	"reflect"
	"runtime"
	"sync"
	"weak"
)

// registry maps an object, by a weak pointer to it, to its message.
var registry = struct {
	sync.Mutex
	m map[weak.Pointer[byte]][]byte
}{m: make(map[weak.Pointer[byte]][]byte)}

// keyOf returns the weak key of obj, or false for an object that is not a
// pointer to a value with a size (only those have an identity).
func keyOf(obj any) (weak.Pointer[byte], bool) {
	v := reflect.ValueOf(obj)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Type().Elem().Size() == 0 {
		return weak.Pointer[byte]{}, false
	}
	return weak.Make((*byte)(v.UnsafePointer())), true
}

// Remember records that obj was decoded from the protobuf message msg.
// msg must not be changed afterwards. Remembering obj again replaces its
// message.
func Remember(obj any, msg []byte) {
	k, ok := keyOf(obj)
	if !ok {
		return
	}
	if msg == nil {
		msg = []byte{}
	}
	registry.Lock()
	_, had := registry.m[k]
	registry.m[k] = msg
	registry.Unlock()
	if !had {
		// An object remembered, taken, then remembered again gets a
		// second cleanup: harmless, and the pipeline never does it.
		runtime.AddCleanup((*byte)(reflect.ValueOf(obj).UnsafePointer()), forget, k)
	}
}

// Take returns the message obj was decoded from and forgets it, or false
// when none is remembered.
func Take(obj any) ([]byte, bool) {
	k, ok := keyOf(obj)
	if !ok {
		return nil, false
	}
	registry.Lock()
	msg, ok := registry.m[k]
	delete(registry.m, k)
	registry.Unlock()
	return msg, ok
}

// Forget forgets the message obj was decoded from, if any: call it before
// changing a remembered object.
func Forget(obj any) {
	if k, ok := keyOf(obj); ok {
		forget(k)
	}
}

// forget drops k's entry, if any.
func forget(k weak.Pointer[byte]) {
	registry.Lock()
	delete(registry.m, k)
	registry.Unlock()
}

// Len returns the number of objects remembered and neither taken,
// forgotten nor collected.
func Len() int {
	registry.Lock()
	defer registry.Unlock()
	return len(registry.m)
}
