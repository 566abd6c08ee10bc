// Package handlertest holds what the informer and factory tests share: a
// handler that records what it is told, in order, and comparison helpers.
package handlertest

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/tools/cache"

	"github.com/warmcache/warmcache/internal/testkit"
)

// Event is one recorded notification, formatted for comparison:
// "add ns/a@3 initial=true", "update ns/a@3 -> ns/a@4", "delete ns/a@4",
// a tombstone as "dfsu(ns/a@4)".
type Event string

// Describe formats obj as key@resourceVersion.
func Describe(obj interface{}) string {
	switch o := obj.(type) {
	case cache.DeletedFinalStateUnknown:
		return "dfsu(" + o.Key + "@" + rvOf(o.Obj) + ")"
	case nil:
		return "nil"
	}
	key, _ := cache.MetaNamespaceKeyFunc(obj)
	return key + "@" + rvOf(obj)
}

func rvOf(obj interface{}) string {
	m, err := meta.Accessor(obj)
	if err != nil {
		return ""
	}
	return m.GetResourceVersion()
}

// Recorder is a cache.ResourceEventHandler that records what it is told,
// in order. Its methods are safe for concurrent use.
type Recorder struct {
	// Block, when set before the handler is added, is received from before
	// each notification returns: a test holds the handler back with it.
	Block chan struct{}

	mu     sync.Mutex
	events []Event
	// changed is closed and replaced on every event.
	changed chan struct{}
}

// NewRecorder returns an empty Recorder.
func NewRecorder() *Recorder { return &Recorder{changed: make(chan struct{})} }

func (r *Recorder) record(e Event) {
	if r.Block != nil {
		<-r.Block
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
	close(r.changed)
	r.changed = make(chan struct{})
}

// OnAdd records an add.
func (r *Recorder) OnAdd(obj interface{}, initial bool) {
	r.record(Event(fmt.Sprintf("add %s initial=%v", Describe(obj), initial)))
}

// OnUpdate records an update.
func (r *Recorder) OnUpdate(old, new interface{}) {
	r.record(Event(fmt.Sprintf("update %s -> %s", Describe(old), Describe(new))))
}

// OnDelete records a delete.
func (r *Recorder) OnDelete(obj interface{}) {
	r.record(Event("delete " + Describe(obj)))
}

// Snapshot returns the events so far.
func (r *Recorder) Snapshot() []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Event(nil), r.events...)
}

// WaitFor waits until at least n events were recorded and returns them; it
// fails the test after testkit.Timeout.
func (r *Recorder) WaitFor(t testing.TB, n int) []Event {
	t.Helper()
	timeout := time.After(testkit.Timeout())
	for {
		r.mu.Lock()
		got, ch := append([]Event(nil), r.events...), r.changed
		r.mu.Unlock()
		if len(got) >= n {
			return got
		}
		select {
		case <-ch:
		case <-timeout:
			t.Fatalf("timed out waiting for %d events; got %d: %q", n, len(got), got)
		}
	}
}

// EqualEvents fails the test unless got equals want, in order.
func EqualEvents(t testing.TB, got, want []Event) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d events, want %d:\ngot  %q\nwant %q", len(got), len(want), got, want)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("event %d: got %q, want %q\nall: %q", i, got[i], want[i], got)
		}
	}
}

// DiffMaps describes up to 10 differences between got and want ("" if
// none).
func DiffMaps(got, want map[string]string) string {
	var out []string
	for k, w := range want {
		if g, ok := got[k]; !ok || g != w {
			out = append(out, fmt.Sprintf("%s: got %q (present %v), want %q", k, g, ok, w))
		}
	}
	for k, g := range got {
		if _, ok := want[k]; !ok {
			out = append(out, fmt.Sprintf("%s: got %q, want absent", k, g))
		}
	}
	sort.Strings(out)
	if len(out) > 10 {
		out = append(out[:10], fmt.Sprintf("... %d more", len(out)-10))
	}
	return strings.Join(out, "; ")
}

// SortedEvents returns a sorted copy of es, for notifications whose order
// is not promised (different keys of one relist).
func SortedEvents(es []Event) []Event {
	out := append([]Event(nil), es...)
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}
