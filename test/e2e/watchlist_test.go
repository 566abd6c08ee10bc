package e2e

import (
	"math"
	"path/filepath"
	"testing"
)

// watchListPods spans three list pages of 500.
const watchListPods = 1100

// TestColdStartStreamsWithWatchList: on a cold start the controller's
// informer streams the initial list with WatchList when the apiserver
// allows it (one sendInitialEvents watch, counted by the apiserver's
// apiserver_watch_list_duration_seconds, and no LIST), and falls back to a
// LIST in pages of 500 when the WatchList feature gate is off (the
// apiserver may answer in fewer pages than asked: its watch cache serves a
// list in one response). Either way the file equals a direct LIST. The
// case with the feature gate off has an apiserver of its own.
func TestColdStartStreamsWithWatchList(t *testing.T) {
	t.Parallel()
	pages := math.Ceil(watchListPods / 500.0)
	for _, tc := range []struct {
		name          string
		apiserverArgs []string
		// minLists, maxLists bound the LIST requests; wantStreams is the
		// number of WatchList streams.
		minLists, maxLists, wantStreams float64
	}{
		{"WatchList enabled", nil, 0, 0, 1},
		{"WatchList disabled", []string{"--feature-gates=WatchList=false"}, 1, pages, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := needEnv(t)
			var c *cluster
			var ns string
			if tc.apiserverArgs == nil {
				c, ns = sharedCluster(ctx, t, "stream")
			} else {
				c, ns = startCluster(ctx, t, tc.apiserverArgs...), "stream"
			}
			c.createPods(ctx, t, ns, 0, watchListPods)
			file := filepath.Join(t.TempDir(), "cache.db")
			lists0 := c.listRequests(ctx, t, "pods", ns)
			streams0 := c.watchListRequests(ctx, t, "pods", ns)

			ch := startChild(t, childOptions{kubeconfig: c.kubeconfig, cacheFile: file, namespace: ns})
			ch.waitSynced(ctx)
			st, _ := ch.stop()
			lists := c.listRequests(ctx, t, "pods", ns) - lists0
			streams := c.watchListRequests(ctx, t, "pods", ns) - streams0
			if lists < tc.minLists || lists > tc.maxLists || streams != tc.wantStreams {
				t.Errorf("the apiserver served %v LIST requests and %v WatchList streams for pods, want %v to %v LISTs and %v streams",
					lists, streams, tc.minLists, tc.maxLists, tc.wantStreams)
			}
			if float64(st.ListRequests) != lists {
				t.Errorf("the informer counted %d LIST requests, the apiserver %v", st.ListRequests, lists)
			}
			want := c.listPods(ctx, t, ns)
			if d := readCache(ctx, t, file, podsIdentity(ns)).items.diff(want); d != "" {
				t.Errorf("the cache file differs from a LIST: %s", d)
			}
		})
	}
}
