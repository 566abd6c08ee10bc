package watchdecode

import (
	"reflect"
	"testing"

	k8sruntime "k8s.io/apimachinery/pkg/runtime"
)

// FuzzSameEventsAsClientGo decodes any bytes as a watch stream, in
// protobuf and in JSON, with client-go's decoding and with the parallel
// one, and wants the same events and the body closed.
func FuzzSameEventsAsClientGo(f *testing.F) {
	for _, c := range clients[:2] {
		for _, st := range streams {
			e := newEncoder(f, c.mediaType)
			if !st.write(f, e, c.mediaType) || e.buf.Len() > 64<<10 {
				continue
			}
			f.Add(e.buf.Bytes())
		}
		e := newEncoder(f, c.mediaType)
		e.podEvents(f, 0, 3)
		f.Add(e.buf.Bytes())
	}
	// Codec factories are costly to build: once, not per input.
	ns := make([]k8sruntime.NegotiatedSerializer, len(clients))
	for i, c := range clients {
		ns[i] = c.ns()
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for i, c := range clients {
			want := drain(watchOver(t, ns[i], c.mediaType, newBody(data)))
			b := newBody(data)
			got := drain(watchOver(t, negotiated{inner: ns[i], procs: 3}, c.mediaType, b))
			if !b.closed.Load() {
				t.Fatalf("%s: the body is open after the watch closed", c.name)
			}
			if len(got) != len(want) {
				t.Fatalf("%s: %d events, client-go %d", c.name, len(got), len(want))
			}
			for i := range want {
				if got[i].Type != want[i].Type || !reflect.DeepEqual(got[i].Object, want[i].Object) {
					t.Fatalf("%s: event %d: %s %#v, client-go %s %#v", c.name, i, got[i].Type, got[i].Object, want[i].Type, want[i].Object)
				}
			}
		}
	})
}
