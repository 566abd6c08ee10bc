package e2e

import (
	"path/filepath"
	"testing"
)

// coldPods is the size of the cold-start test: enough for ten list pages
// and a file of tens of megabytes.
const coldPods = 5000

// TestColdStart: the controller starts on an empty cache file over 5,000
// pods, syncs, and both what its handler saw and what its file holds equal
// a direct LIST.
func TestColdStart(t *testing.T) {
	t.Parallel()
	ctx := needEnv(t)
	c, ns := sharedCluster(ctx, t, "cold")
	c.createPods(ctx, t, ns, 0, coldPods)
	file := filepath.Join(t.TempDir(), "cache.db")

	ch := startChild(t, childOptions{kubeconfig: c.kubeconfig, cacheFile: file, namespace: ns})
	synced := ch.waitSynced(ctx)
	st, events := ch.stop()
	want := c.listPods(ctx, t, ns)

	if synced.WarmStart || st.WarmStart {
		t.Errorf("a start on an empty file reported a warm start")
	}
	initial, rest, err := split(events)
	if err != nil {
		t.Fatal(err)
	}
	if d := initial.diff(want); d != "" {
		t.Errorf("initial adds differ from a direct LIST: %s", d)
	}
	if len(rest) != 0 {
		t.Errorf("events other than the initial adds: %+v", rest[:min(len(rest), 5)])
	}
	if st.Events.InitialAdds != coldPods || st.Objects != coldPods {
		t.Errorf("stats: %d initial adds, %d objects; want %d", st.Events.InitialAdds, st.Objects, coldPods)
	}
	got := readCache(ctx, t, file, podsIdentity(ns))
	if got.info.State != "complete" {
		t.Errorf("cache file state %q (%s), want complete", got.info.State, got.info.Reason)
	}
	if d := got.items.diff(want); d != "" {
		t.Errorf("cache file differs from a direct LIST: %s", d)
	}
	t.Logf("cold start over %d pods: synced in %.2fs, %d LIST + %d WatchList requests, %d bytes received, peak heap %d MiB",
		coldPods, st.SyncedSeconds, st.ListRequests, st.WatchListRequests, st.BytesReceived, st.PeakHeapBytes>>20)
}
