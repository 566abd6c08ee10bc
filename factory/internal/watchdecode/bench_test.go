package watchdecode

import (
	"testing"

	"k8s.io/apimachinery/pkg/watch"
)

// benchEvents is the number of podgen pods of each benchmark stream.
const benchEvents = 5000

// BenchmarkWatchDecode decodes a watch stream of benchEvents podgen pods
// with client-go's StreamWatcher decoding and with the parallel one (at
// GOMAXPROCS workers), in the same run; ns/event is the time from the
// first byte to the last event received.
func BenchmarkWatchDecode(b *testing.B) {
	for _, c := range clients {
		e := newEncoder(b, c.mediaType)
		e.podEvents(b, 0, benchEvents)
		data := e.buf.Bytes()
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
					if n != benchEvents {
						b.Fatalf("%d events, want %d", n, benchEvents)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*benchEvents), "ns/event")
			})
		}
	}
}
