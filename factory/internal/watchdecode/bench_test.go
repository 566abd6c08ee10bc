package watchdecode

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/warmcache/warmcache/internal/podgen"

	"k8s.io/apimachinery/pkg/watch"
)

// benchEvents is the number of podgen pods of each benchmark stream.
const benchEvents = 5000

// BenchmarkWatchDecodeSmall decodes a watch stream of benchEvents pods
// that hold only their key and resourceVersion (about 100 bytes each), in
// protobuf, where a hand-off per frame would cost most.
func BenchmarkWatchDecodeSmall(b *testing.B) {
	e := newEncoder(b, protobuf)
	for i := range benchEvents {
		p := podgen.Pod(i)
		e.event(b, watch.Added, &corev1.Pod{TypeMeta: p.TypeMeta, ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: p.Name, ResourceVersion: p.ResourceVersion}})
	}
	benchDecode(b, client{"typed protobuf small", protobuf, typedSerializer}, e.buf.Bytes(), benchEvents)
}

// BenchmarkWatchDecodeTiny decodes a watch stream of one pod: what a
// watch costs to set up and tear down.
func BenchmarkWatchDecodeTiny(b *testing.B) {
	e := newEncoder(b, protobuf)
	e.podEvents(b, 0, 1)
	benchDecode(b, client{"typed protobuf one pod", protobuf, typedSerializer}, e.buf.Bytes(), 1)
}

// BenchmarkWatchDecode decodes a watch stream of benchEvents podgen pods
// with client-go's StreamWatcher decoding and with the parallel one (at
// GOMAXPROCS workers), in the same run; ns/event is the time from the
// first byte to the last event received.
func BenchmarkWatchDecode(b *testing.B) {
	for _, c := range clients {
		e := newEncoder(b, c.mediaType)
		e.podEvents(b, 0, benchEvents)
		benchDecode(b, c, e.buf.Bytes(), benchEvents)
	}
}

// benchDecode runs c's decoding of data, events events, with client-go's
// decoding and with the parallel one.
func benchDecode(b *testing.B, c client, data []byte, events int) {
	for _, impl := range []string{"client-go", "parallel"} {
		b.Run(c.name+"/"+impl, func(b *testing.B) {
			ns := c.ns()
			if impl == "parallel" {
				ns = Wrap(ns)
			}
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				w := watchOver(b, ns, c.mediaType, newBody(data))
				n := 0
				for ev := range w.ResultChan() {
					if ev.Type == watch.Error {
						b.Fatalf("error event: %v", ev.Object)
					}
					n++
				}
				if n != events {
					b.Fatalf("%d events, want %d", n, events)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*events), "ns/event")
		})
	}
}
