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
//
// # Why one registry per process
//
// The registry is package state, not a value passed around, because the
// object is the only thing its four users share. An object travels from
// the decoder of factory's clients (factory.TypedListWatch, public) through
// client-go's StreamWatcher and cache.ListerWatcher, the reflector and the
// queue, to the informer (which Forgets) and to the store's codec.Codec
// Encode (which Takes) and store/bolt's reads of an update's old object
// (which Peek); none of these signatures, client-go's or warmcache's public
// ones, carries anything but the object. A registry value would have to be
// handed to TypedListWatch, informer.Options, codec.Protobuf and every
// wrapper that changes objects, and the same one to all of them: a
// ListerWatcher, informer or codec wired by hand with another (or none)
// would lose the saving without a sign, and a wrapper that Forgot in the
// wrong registry would let the store write the server's bytes for an
// object it changed. One registry keyed by the object's address (unique in
// the process while the object lives; the weak pointer tells a later
// object at the same address apart) makes each of them correct alone:
// whoever decoded an object, whoever Forgets or Takes it finds its entry.
// It holds no configuration and nothing a test could set; its only state
// is the entries of objects alive and not yet stored.
package wire

import (
	"reflect"
	"runtime"
	"sync"
	"unsafe"
	"weak"
)

// entry is a remembered object's message. wp tells the object apart from
// a later one at the same address (once the first is collected, wp points
// to nothing); cleanup drops the entry when the object is collected, and
// is stopped when the entry goes first.
type entry struct {
	wp      weak.Pointer[byte]
	msg     []byte
	cleanup runtime.Cleanup
}

// registry maps an object's address to its entry. Keying by address lets
// Take and Forget of an object never remembered (most of what the
// informer forgets) cost a map lookup, without attaching a weak handle to
// the object.
var registry = struct {
	sync.Mutex
	m map[uintptr]entry
}{m: make(map[uintptr]entry)}

// addrOf returns the address of obj's value, or false for an object that
// is not a pointer to a value with a size (only those have an identity).
func addrOf(obj any) (unsafe.Pointer, bool) {
	v := reflect.ValueOf(obj)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Type().Elem().Size() == 0 {
		return nil, false
	}
	return v.UnsafePointer(), true
}

// Remember records that obj was decoded from the protobuf message msg.
// msg must not be changed afterwards. Remembering obj again replaces its
// message.
func Remember(obj any, msg []byte) {
	p, ok := addrOf(obj)
	if !ok {
		return
	}
	if msg == nil {
		msg = []byte{}
	}
	addr := uintptr(p)
	registry.Lock()
	defer registry.Unlock()
	if e, ok := registry.m[addr]; ok {
		if e.wp.Value() == (*byte)(p) {
			e.msg = msg
			registry.m[addr] = e
			return
		}
		e.cleanup.Stop() // a collected object's, not yet run
	}
	wp := weak.Make((*byte)(p))
	registry.m[addr] = entry{wp: wp, msg: msg, cleanup: runtime.AddCleanup((*byte)(p), collected, key{addr, wp})}
}

// key names an entry for its cleanup.
type key struct {
	addr uintptr
	wp   weak.Pointer[byte]
}

// collected drops the entry of a collected object, unless a later object
// at its address has one.
func collected(k key) {
	registry.Lock()
	defer registry.Unlock()
	if e, ok := registry.m[k.addr]; ok && e.wp == k.wp {
		delete(registry.m, k.addr)
	}
}

// take removes and returns obj's entry.
func take(obj any) (entry, bool) {
	p, ok := addrOf(obj)
	if !ok {
		return entry{}, false
	}
	addr := uintptr(p)
	registry.Lock()
	defer registry.Unlock()
	e, ok := registry.m[addr]
	if !ok || e.wp.Value() != (*byte)(p) {
		return entry{}, false // none, or a collected object's
	}
	delete(registry.m, addr)
	e.cleanup.Stop()
	return e, true
}

// Take returns the message obj was decoded from and forgets it, or false
// when none is remembered.
func Take(obj any) ([]byte, bool) {
	e, ok := take(obj)
	return e.msg, ok
}

// Peek returns the message obj was decoded from without forgetting it, or
// false when none is remembered. The message must not be changed.
func Peek(obj any) ([]byte, bool) {
	p, ok := addrOf(obj)
	if !ok {
		return nil, false
	}
	registry.Lock()
	defer registry.Unlock()
	e, ok := registry.m[uintptr(p)]
	if !ok || e.wp.Value() != (*byte)(p) {
		return nil, false
	}
	return e.msg, true
}

// Forget forgets the message obj was decoded from, if any: call it before
// changing a remembered object.
func Forget(obj any) { take(obj) }

// Len returns the number of entries: objects remembered and neither
// taken, forgotten nor collected (a collected one's until its cleanup
// runs).
func Len() int {
	registry.Lock()
	defer registry.Unlock()
	return len(registry.m)
}
