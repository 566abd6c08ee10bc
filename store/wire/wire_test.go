package wire

import (
	"runtime"
	"testing"
	"time"
)

// object is about the size of a decoded Pod's struct: a weak handle is
// looked up among its span's, and a span holds few objects of this size.
type object struct {
	name string
	_    [1000]byte
}

func TestRememberTakeForget(t *testing.T) {
	a, b := &object{name: "a"}, &object{name: "b"}
	Remember(a, []byte("message of a"))
	Remember(b, []byte("message of b"))
	for range 2 {
		if msg, ok := Peek(a); !ok || string(msg) != "message of a" {
			t.Fatalf("Peek(a) = %q, %v; want the message remembered for a, kept", msg, ok)
		}
	}
	if msg, ok := Peek(&object{name: "a"}); ok {
		t.Fatalf("Peek of a copy of a = %q; want nothing", msg)
	}
	if msg, ok := Take(a); !ok || string(msg) != "message of a" {
		t.Fatalf("Take(a) = %q, %v; want the message remembered for a", msg, ok)
	}
	if msg, ok := Peek(a); ok {
		t.Fatalf("Peek(a) after Take(a) = %q; want nothing", msg)
	}
	if msg, ok := Take(a); ok {
		t.Fatalf("a second Take(a) = %q; want nothing: Take forgets", msg)
	}
	// An equal object at another address is another object.
	if msg, ok := Take(&object{name: "b"}); ok {
		t.Fatalf("Take of a copy of b = %q; want nothing", msg)
	}
	Forget(b)
	if msg, ok := Take(b); ok {
		t.Fatalf("Take(b) after Forget(b) = %q; want nothing", msg)
	}
	Remember(b, []byte("first"))
	Remember(b, []byte("second"))
	if msg, _ := Take(b); string(msg) != "second" {
		t.Fatalf("Take(b) = %q; want the last message remembered", msg)
	}
}

func TestValuesWithoutIdentityAreIgnored(t *testing.T) {
	n := Len()
	Remember(object{name: "value"}, []byte("x"))
	Remember((*object)(nil), []byte("x"))
	Remember(&struct{}{}, []byte("x"))
	if Len() != n {
		t.Fatalf("Len = %d after remembering values without identity; want %d", Len(), n)
	}
	if _, ok := Take(object{name: "value"}); ok {
		t.Fatal("Take of a value found a message")
	}
}

// An object never taken is forgotten once the garbage collector frees it:
// the registry neither keeps objects alive nor grows with them.
func TestCollectedObjectsAreForgotten(t *testing.T) {
	before := Len()
	func() {
		for i := range 1000 {
			Remember(&object{name: string(rune('a' + i%26))}, make([]byte, 64))
		}
	}()
	if Len() < before+1000 {
		t.Fatalf("Len = %d; want at least %d", Len(), before+1000)
	}
	deadline := time.Now().Add(30 * time.Second)
	for Len() > before {
		if time.Now().After(deadline) {
			t.Fatalf("Len = %d after the objects were collected; want %d", Len(), before)
		}
		runtime.GC() // frees the objects, then queues their cleanups
		runtime.Gosched()
	}
}

// BenchmarkNewObject is the informer's case: each object decoded is
// remembered once and taken once.
func BenchmarkNewObject(b *testing.B) {
	msg := make([]byte, 4096)
	b.ReportAllocs()
	for b.Loop() {
		o := &object{}
		Remember(o, msg)
		Take(o)
	}
}

// BenchmarkNewObjectAlone is BenchmarkNewObject's allocation without the
// registry, for comparison.
func BenchmarkNewObjectAlone(b *testing.B) {
	b.ReportAllocs()
	var keep *object
	for b.Loop() {
		keep = &object{}
	}
	_ = keep
}
