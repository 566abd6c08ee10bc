package watchdecode

import (
	"encoding/binary"
	"fmt"
	"io"
	"reflect"
	"strings"
	"sync"
	"testing"
	"testing/synctest"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

const (
	protobuf = runtime.ContentTypeProtobuf
	jsonType = runtime.ContentTypeJSON
)

type client struct {
	name      string
	mediaType string
	ns        func() runtime.NegotiatedSerializer
}

var clients = []client{
	{"typed protobuf", protobuf, typedSerializer},
	{"typed JSON", jsonType, typedSerializer},
	{"dynamic JSON", jsonType, dynamicSerializer},
}

// protoFrame returns b as a length-delimited frame.
func protoFrame(b []byte) []byte {
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(b))), b...)
}

// streams are the streams every client decodes, by name: each writes its
// events with e and may append raw bytes.
var streams = []struct {
	name string
	// write writes the stream; it returns false if the client's media
	// type cannot express it.
	write func(t testing.TB, e *encoder, mediaType string) bool
	// wantError is a substring of the Error event's message that ends
	// the stream; "" if it ends quietly.
	wantError string
}{
	{"thousands of events", func(t testing.TB, e *encoder, mt string) bool {
		n := 2000
		if mt != protobuf {
			n = 1000 // JSON decodes slower, under -race much slower
		}
		e.podEvents(t, 0, n)
		return true
	}, ""},
	{"one event", func(t testing.TB, e *encoder, _ string) bool { e.podEvents(t, 0, 1); return true }, ""},
	{"empty", func(t testing.TB, e *encoder, _ string) bool { return true }, ""},
	{"corrupt frame in the middle", func(t testing.TB, e *encoder, mt string) bool {
		e.podEvents(t, 0, 300)
		if mt == protobuf {
			garbage := []byte("\x0a\x05ADDED\xff\xff\xff not a message")
			e.raw(protoFrame(garbage))
		} else {
			e.raw([]byte(`{"type":"ADDED","object":{"apiVersion":"v1","metadata":{"name":"kindless"}}}` + "\n"))
		}
		e.podEvents(t, 300, 300)
		return true
	}, "unable to decode an event from the watch stream"},
	{"undecodable object in the middle", func(t testing.TB, e *encoder, mt string) bool {
		e.podEvents(t, 0, 200)
		if mt != protobuf {
			return false
		}
		// A valid envelope whose object is not a Kubernetes message.
		var ev metav1.WatchEvent
		ev.Type = "MODIFIED"
		ev.Object.Raw = []byte("k8s\x00\x0a\x03bad")
		b, err := ev.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		e.raw(protoFrame(b))
		e.podEvents(t, 200, 200)
		return true
	}, "unable to decode watch event"},
	{"invalid event type", func(t testing.TB, e *encoder, mt string) bool {
		e.podEvents(t, 0, 200)
		var ev metav1.WatchEvent
		ev.Type = "SOMETIMES"
		ev.Object.Raw = []byte(`{"apiVersion":"v1","kind":"Pod"}`)
		if mt == protobuf {
			b, err := ev.Marshal()
			if err != nil {
				t.Fatal(err)
			}
			e.raw(protoFrame(b))
		} else {
			e.raw([]byte(`{"type":"SOMETIMES","object":{"apiVersion":"v1","kind":"Pod"}}` + "\n"))
		}
		e.podEvents(t, 200, 200)
		return true
	}, "got invalid watch event type: SOMETIMES"},
	{"not JSON in the middle", func(t testing.TB, e *encoder, mt string) bool {
		if mt == protobuf {
			return false
		}
		e.podEvents(t, 0, 200)
		e.raw([]byte(`{"type": nope}`))
		e.podEvents(t, 200, 200)
		return true
	}, "unable to decode an event from the watch stream: invalid character"},
	{"error event", func(t testing.TB, e *encoder, _ string) bool {
		e.podEvents(t, 0, 100)
		e.event(t, watch.Error, &metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusFailure, Code: 410, Reason: metav1.StatusReasonExpired, Message: "too old resource version"})
		e.podEvents(t, 100, 100)
		return true
	}, ""},
	{"truncated in a frame", func(t testing.TB, e *encoder, _ string) bool {
		e.podEvents(t, 0, 300)
		e.buf.Truncate(e.buf.Len() - 100)
		return true
	}, ""},
	{"frame larger than client-go allows", func(t testing.TB, e *encoder, mt string) bool {
		if mt != protobuf {
			return false
		}
		e.podEvents(t, 0, 100)
		e.raw(binary.BigEndian.AppendUint32(nil, maxFrameBytes+1))
		e.raw(make([]byte, maxFrameBytes+1))
		e.podEvents(t, 100, 10)
		return true
	}, "object to decode was longer than maximum allowed size"},
}

// TestSameEventsAsClientGo decodes each stream with client-go's decoding
// and with the parallel one, and wants the same events, in the same
// order, with the same objects and errors, and the body closed.
//
// Each runs with the default read-ahead, and the protobuf client's also
// with the least (one chunk read ahead at a time, so the reader waits on
// the decoders at every chunk; the read-ahead does not depend on the
// framing); each must give the budget back once the stream has ended.
func TestSameEventsAsClientGo(t *testing.T) {
	readaheads := []struct {
		name   string
		budget func() *Budget
	}{
		{"", func() *Budget { return NewBudget(DefaultBudgetBytes) }},
		{"/one chunk read ahead", func() *Budget { return newBudget(0, 0) }},
	}
	for _, c := range clients {
		for _, st := range streams {
			for i, ra := range readaheads {
				if i > 0 && c.mediaType != protobuf {
					continue
				}
				t.Run(c.name+"/"+st.name+ra.name, func(t *testing.T) {
					synctest.Test(t, func(t *testing.T) {
						sameEventsAsClientGo(t, c, st.write, st.wantError, ra.budget())
					})
				})
			}
		}
	}
}

func sameEventsAsClientGo(t *testing.T, c client, write func(testing.TB, *encoder, string) bool, wantError string, budget *Budget) {
	e := newEncoder(t, c.mediaType)
	if !write(t, e, c.mediaType) {
		t.Skipf("%s cannot carry this stream", c.mediaType)
	}
	data := e.buf.Bytes()

	want := drain(watchOver(t, c.ns(), c.mediaType, newBody(data)))
	b := newBody(data)
	ns := negotiated{inner: c.ns(), procs: 4, budget: budget}
	w := watchOver(t, ns, c.mediaType, b)
	got := drain(w)
	if !b.closed.Load() {
		t.Error("the body is open after the watch closed")
	}
	w.Stop()
	synctest.Wait() // the reader ends once the body is closed
	if free := budget.Free(); free != budget.limit {
		t.Errorf("read-ahead budget: %d bytes free after the stream ended, want all %d", free, budget.limit)
	}

	if len(got) != len(want) {
		t.Fatalf("got %d events, client-go %d", len(got), len(want))
	}
	for i := range want {
		if got[i].Type != want[i].Type || !reflect.DeepEqual(got[i].Object, want[i].Object) {
			t.Fatalf("event %d: got %s %#v, client-go %s %#v", i, got[i].Type, got[i].Object, want[i].Type, want[i].Object)
		}
	}
	checkShape(t, got, wantError)
}

// checkShape checks what the events must be whatever client-go does:
// resourceVersions increasing, bookmarks present in long streams, and the
// stream ending with an Error event carrying wantError if set.
func checkShape(t *testing.T, events []watch.Event, wantError string) {
	t.Helper()
	last, bookmarks := 0, 0
	for i, e := range events {
		if e.Type == watch.Error {
			if i != len(events)-1 && wantError != "" {
				t.Errorf("Error event %d is not the last of %d", i, len(events))
			}
			continue
		}
		if e.Type == watch.Bookmark {
			bookmarks++
		}
		var rv int
		m, ok := e.Object.(metav1.Object)
		if !ok {
			t.Fatalf("event %d: %T has no metadata", i, e.Object)
		}
		if _, err := fmt.Sscan(m.GetResourceVersion(), &rv); err != nil || rv <= last {
			t.Fatalf("event %d: resourceVersion %q after %d", i, m.GetResourceVersion(), last)
		}
		last = rv
	}
	if len(events) >= 100 && bookmarks == 0 {
		t.Error("no bookmark came through")
	}
	if wantError == "" {
		return
	}
	if len(events) == 0 || events[len(events)-1].Type != watch.Error {
		t.Fatalf("the stream did not end with an Error event")
	}
	s, ok := events[len(events)-1].Object.(*metav1.Status)
	if !ok || !strings.Contains(s.Message, wantError) {
		t.Fatalf("Error event %#v, want a Status with %q", events[len(events)-1].Object, wantError)
	}
}

// TestOneProcDecodesInline wants client-go's own frame reader with one P.
func TestOneProcDecodesInline(t *testing.T) {
	for _, procs := range []int{1, 2} {
		ns := negotiated{inner: typedSerializer(), procs: procs}
		_, _, framer, err := runtime.NewClientNegotiator(ns, podGV).StreamDecoder(protobuf, nil)
		if err != nil {
			t.Fatal(err)
		}
		r := framer.NewFrameReader(newBody(nil))
		if _, parallel := r.(*stream); parallel != (procs > 1) {
			t.Errorf("GOMAXPROCS %d: frame reader %T", procs, r)
		}
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestStop stops the watch from another goroutine while its event waits
// for a receiver, and while it waits for the network: the result channel
// closes, the body is closed, and every goroutine ends (synctest fails on
// one left blocked).
func TestStop(t *testing.T) {
	for _, c := range clients {
		t.Run(c.name+"/send pending", func(t *testing.T) {
			e := newEncoder(t, c.mediaType)
			e.podEvents(t, 0, 500)
			synctest.Test(t, func(t *testing.T) {
				b := newBody(e.buf.Bytes())
				w := watchOver(t, negotiated{inner: c.ns(), procs: 4}, c.mediaType, b)
				if ev := <-w.ResultChan(); ev.Type != watch.Added {
					t.Fatalf("first event %s", ev.Type)
				}
				synctest.Wait() // the next send is pending
				var wg sync.WaitGroup
				for range 3 {
					wg.Go(w.Stop)
				}
				wg.Wait()
				synctest.Wait()
				if _, ok := <-w.ResultChan(); ok {
					t.Error("an event after Stop")
				}
				if !b.closed.Load() {
					t.Error("body open after Stop")
				}
			})
		})
		t.Run(c.name+"/waiting for the network", func(t *testing.T) {
			e := newEncoder(t, c.mediaType)
			e.podEvents(t, 0, 3)
			synctest.Test(t, func(t *testing.T) {
				r, pw := io.Pipe()
				go func() {
					pw.Write(e.buf.Bytes()) // the rest never comes
				}()
				w := watchOver(t, negotiated{inner: c.ns(), procs: 4}, c.mediaType, r)
				for range 3 {
					<-w.ResultChan()
				}
				synctest.Wait()
				w.Stop()
				synctest.Wait()
				if _, ok := <-w.ResultChan(); ok {
					t.Error("an event after Stop")
				}
				pw.Close()
			})
		})
	}
}

// repeatBody serves one frame n times and counts the frames it served.
type repeatBody struct {
	frame  []byte
	n      int
	served int
	off    int
}

func (r *repeatBody) Read(p []byte) (int, error) {
	total := 0
	for len(p) > 0 {
		if r.off == 0 {
			if r.served == r.n {
				break
			}
			r.served++
		}
		k := copy(p, r.frame[r.off:])
		r.off = (r.off + k) % len(r.frame)
		p, total = p[k:], total+k
	}
	if total == 0 {
		return 0, io.EOF
	}
	return total, nil
}

func (r *repeatBody) Close() error { return nil }

// TestBackPressure wants a watch whose consumer does not receive to stop
// reading its body once it has read ahead what its floor and its budget
// allow (chunks charged chunkBytes each) beyond its decode window, and to
// give the budget back when stopped.
func TestBackPressure(t *testing.T) {
	const (
		procs       = 4
		floorChunks = 2
		budgetChunk = 5
	)
	for _, c := range clients {
		t.Run(c.name, func(t *testing.T) {
			frame := bookmarkFrame(t, c.mediaType)
			synctest.Test(t, func(t *testing.T) {
				budget := newBudget(budgetChunk*chunkBytes, floorChunks*chunkBytes)
				b := &repeatBody{frame: frame, n: 200000}
				w := watchOver(t, negotiated{inner: c.ns(), procs: procs, budget: budget}, c.mediaType, b)
				if ev := <-w.ResultChan(); ev.Type != watch.Bookmark {
					t.Fatalf("first event %s", ev.Type)
				}
				synctest.Wait()
				// Chunks read ahead, queued for decoding, pending, being
				// delivered, and what the body's buffer holds.
				window := (2*procs + 2) * chunkFrames
				bound := window + (floorChunks+budgetChunk)*chunkFrames + readBuffer/len(frame) + 2
				if b.served > bound {
					t.Errorf("served %d frames to a consumer that took 1; want at most %d", b.served, bound)
				}
				if b.served <= window+floorChunks*chunkFrames {
					t.Errorf("served %d frames to a consumer that took 1; want more than the decode window and the floor (%d): frames read ahead on the budget", b.served, window+floorChunks*chunkFrames)
				}
				if free := budget.Free(); free != 0 {
					t.Errorf("%d bytes of the budget free while the consumer waits, want none", free)
				}
				w.Stop()
				synctest.Wait()
				if free := budget.Free(); free != budget.limit {
					t.Errorf("%d bytes of the budget free after Stop, want all %d", free, budget.limit)
				}
			})
		})
	}
}

// TestSharedBudget has a stream whose consumer does not receive take all
// of a shared budget, and wants another stream on it to deliver every
// event all the same, from its floor.
func TestSharedBudget(t *testing.T) {
	const procs = 2
	for _, c := range clients {
		t.Run(c.name, func(t *testing.T) {
			frame := bookmarkFrame(t, c.mediaType)
			synctest.Test(t, func(t *testing.T) {
				budget := newBudget(4*chunkBytes, 2*chunkBytes)
				ns := negotiated{inner: c.ns(), procs: procs, budget: budget}
				stuck := watchOver(t, ns, c.mediaType, &repeatBody{frame: frame, n: 200000})
				<-stuck.ResultChan()
				synctest.Wait()
				if free := budget.Free(); free != 0 {
					t.Fatalf("%d bytes of the budget free while the stuck stream waits, want none", free)
				}

				const n = 5000
				other := &repeatBody{frame: frame, n: n}
				got := drain(watchOver(t, ns, c.mediaType, other))
				if len(got) != n || other.served != n {
					t.Errorf("the other stream delivered %d events of %d served, want %d", len(got), other.served, n)
				}
				stuck.Stop()
				synctest.Wait()
				if free := budget.Free(); free != budget.limit {
					t.Errorf("%d bytes of the budget free after Stop, want all %d", free, budget.limit)
				}
			})
		})
	}
}

// bookmarkFrame returns the frame of one bookmark event.
func bookmarkFrame(t *testing.T, mediaType string) []byte {
	e := newEncoder(t, mediaType)
	e.event(t, watch.Bookmark, &corev1.Pod{TypeMeta: metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"}, ObjectMeta: metav1.ObjectMeta{ResourceVersion: "1"}})
	return e.buf.Bytes()
}
