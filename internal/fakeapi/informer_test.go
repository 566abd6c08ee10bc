package fakeapi

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/tools/cache"

	"github.com/warmcache/warmcache/internal/fakesource"
	"github.com/warmcache/warmcache/internal/podgen"
	"github.com/warmcache/warmcache/internal/testkit"
)

// TestClientGoInformer runs client-go's shared informer against the server
// through a clientset, with WatchList (client-go's default) and with the
// server rejecting it (client-go falls back to LIST then WATCH).
func TestClientGoInformer(t *testing.T) {
	modes := []struct {
		name string
		mode fakesource.WatchListMode
		// lists is whether the informer's sync needed a LIST.
		lists bool
	}{
		{"watchlist", fakesource.WatchListSupported, false},
		{"list and watch", fakesource.WatchListRejected, true},
	}
	for _, ct := range contentTypes {
		for _, m := range modes {
			t.Run(ct.name+"/"+m.name, func(t *testing.T) {
				src := newSource(t, testPods)
				src.SetWatchListMode(m.mode)
				s := startServer(t, Options{Source: src})
				cs := clientset(t, s, ct.contentType, nil)
				lw := cache.NewListWatchFromClient(cs.CoreV1().RESTClient(), "pods", "", fields.Everything())
				inf := cache.NewSharedIndexInformer(lw, &corev1.Pod{}, 0, cache.Indexers{})
				added := make(chan string, testPods+10)
				if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
					AddFunc: func(obj interface{}) { added <- obj.(*corev1.Pod).Name },
				}); err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan struct{})
				go func() {
					defer close(done)
					inf.RunWithContext(ctx)
				}()
				defer func() {
					cancel()
					<-done
				}()
				syncCtx, syncCancel := context.WithTimeout(ctx, testkit.Timeout())
				defer syncCancel()
				if !cache.WaitForCacheSync(syncCtx.Done(), inf.HasSynced) {
					t.Fatal("informer did not sync")
				}
				if n := len(inf.GetStore().ListKeys()); n != testPods {
					t.Fatalf("informer holds %d pods after sync, want %d", n, testPods)
				}
				st := src.Stats()
				// client-go tries WatchList first in both modes.
				if st.WatchLists == 0 || (st.Lists > 0) != m.lists {
					t.Errorf("%d WatchList requests and %d lists, want WatchList tried and lists: %v", st.WatchLists, st.Lists, m.lists)
				}
				for range testPods {
					<-added
				}

				p := podgen.Pod(testPods)
				if _, err := src.Add(p); err != nil {
					t.Fatal(err)
				}
				select {
				case name := <-added:
					if name != p.Name {
						t.Errorf("handler saw %s, want %s", name, p.Name)
					}
				case <-time.After(testkit.Timeout()):
					t.Fatal("the informer's handler never saw the new pod")
				}
			})
		}
	}
}
