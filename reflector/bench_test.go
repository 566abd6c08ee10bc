package reflector

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/warmcache/warmcache/internal/fakesource"
	"github.com/warmcache/warmcache/internal/podgen"
)

// countSink counts what it receives and cancels the run at EndReplace.
type countSink struct {
	objs, maxPage int
	done          func()
}

func (s *countSink) Add(context.Context, interface{}) error    { return nil }
func (s *countSink) Update(context.Context, interface{}) error { return nil }
func (s *countSink) Delete(context.Context, interface{}) error { return nil }
func (s *countSink) Bookmark(context.Context, string) error    { return nil }
func (s *countSink) BeginReplace(context.Context) error        { s.objs = 0; return nil }
func (s *countSink) ReplacePage(_ context.Context, objs []interface{}) error {
	s.objs += len(objs)
	s.maxPage = max(s.maxPage, len(objs))
	return nil
}
func (s *countSink) EndReplace(context.Context, string) error { s.done(); return nil }
func (s *countSink) MarkSynced(context.Context) error         { return nil }

// BenchmarkRelist measures one cold relist of 10,000 realistic pods
// (about 8 KB each) from the fake source into a sink that only counts,
// with WatchList and with a paginated LIST. Most of the cost is the fake
// source deep-copying objects; the figure bounds the reflector's own
// overhead per object.
func BenchmarkRelist(b *testing.B) {
	const n = 10000
	src, err := fakesource.New(fakesource.Options{})
	if err != nil {
		b.Fatal(err)
	}
	for _, p := range podgen.Pods(n) {
		if _, err := src.Add(p); err != nil {
			b.Fatal(err)
		}
	}
	for _, bc := range []struct {
		name   string
		policy WatchListPolicy
		rv     string
	}{{"WatchList", WatchListAuto, ""}, {"LIST", WatchListOff, src.ResourceVersion()}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			logger := klog.Background().V(10)
			for b.Loop() {
				ctx, cancel := context.WithCancel(context.Background())
				sink := &countSink{done: cancel}
				r, err := New(src.Endpoint(podGVK, ""), &corev1.Pod{}, sink, Options{
					UseWatchList: bc.policy,
					Logger:       &logger,
					// An incomplete state relists not older than rv: a
					// paginated LIST, as the RV "0" one is not.
					ResumeFrom: func() (string, bool) { return bc.rv, false },
				})
				if err != nil {
					b.Fatal(err)
				}
				r.Run(ctx)
				if sink.objs != n || sink.maxPage != DefaultListPageSize {
					b.Fatalf("relisted %d objects in pages of up to %d", sink.objs, sink.maxPage)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/object")
		})
	}
}
