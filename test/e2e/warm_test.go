package e2e

import (
	"context"
	"math"
	"path/filepath"
	"testing"
)

// restartPods is the size of the restart tests.
const restartPods = 600

// restartChecks is the LIST requests of a warm restart's resume check at
// restartPods, every object's metadata in pages of a quarter of the store,
// at least 500 (package reflector's version check): 2.
var restartChecks = math.Ceil(restartPods / math.Max(500, restartPods/4))

// restartResult is what runRestart saw.
type restartResult struct {
	before, after state // the server's pods at the first stop and at the end
	changes       changes
	events        []event
	stats         statsView
	lists         float64 // the apiserver's LIST requests for pods during the second run
	watchLists    float64 // its completed WatchList streams for pods during the second run
	file          cached
}

// statsView is the part of the controller's stats the tests check.
type statsView struct {
	warmStart                            bool
	listRequests, relists, resumes       int64
	initialAdds, adds, updates, deletes  int64
	deletesFinalStateUnknown, reconciles int64
}

// runRestart runs the controller cold on a fresh namespace, stops it,
// changes 10% of the pods (creates, updates, deletes), calls between (to
// expire the persisted resourceVersion, or nothing), then runs the controller
// again on the same file until its handler's view equals the server's
// pods, and stops it.
func runRestart(ctx context.Context, t *testing.T, c *cluster, ns string, between func()) restartResult {
	t.Helper()
	c.createPods(ctx, t, ns, 0, restartPods)
	var r restartResult
	file := filepath.Join(t.TempDir(), "cache.db")
	opts := childOptions{kubeconfig: c.kubeconfig, cacheFile: file, namespace: ns}

	first := startChild(t, opts)
	if synced := first.waitSynced(ctx); synced.WarmStart {
		t.Fatal("the first run reported a warm start")
	}
	first.stop()
	r.before = c.listPods(ctx, t, ns)
	r.changes = c.change(ctx, t, ns, r.before, 100000, restartPods/30, restartPods/30, restartPods/30)
	between()
	r.after = c.listPods(ctx, t, ns)

	lists0 := c.listRequests(ctx, t, "pods", ns)
	watchLists0 := c.watchListRequests(ctx, t, "pods", ns)
	second := startChild(t, opts)
	if synced := second.waitSynced(ctx); !synced.WarmStart {
		t.Error("the second run on the same file reported a cold start")
	}
	second.waitConverged(ctx, r.after)
	st, events := second.stop()
	r.lists = c.listRequests(ctx, t, "pods", ns) - lists0
	r.watchLists = c.watchListRequests(ctx, t, "pods", ns) - watchLists0
	r.events = events
	r.stats = statsView{
		warmStart: st.WarmStart, listRequests: st.ListRequests, relists: st.Relists, resumes: st.Resumes,
		initialAdds: st.Events.InitialAdds, adds: st.Events.Adds, updates: st.Events.Updates, deletes: st.Events.Deletes,
		deletesFinalStateUnknown: st.Events.DeletesFinalStateUnknown, reconciles: st.Reconciles,
	}
	r.file = readCache(ctx, t, file, podsIdentity(ns))
	return r
}

// checkRestart checks what every warm restart must give: the run looks
// exactly like a cold start over the server's pods after the changes
// (checkStartedAs), after a 410 too; the file equals the server's pods.
func checkRestart(t *testing.T, r restartResult) {
	t.Helper()
	if d := checkStartedAs(r.events, r.after); d != "" {
		t.Errorf("the warm restart does not look like a cold start: %s", d)
	}
	if d := r.file.items.diff(r.after); d != "" {
		t.Errorf("the cache file differs from a direct LIST: %s", d)
	}
	if r.file.info.State != "complete" {
		t.Errorf("cache file state %q (%s), want complete", r.file.info.State, r.file.info.Reason)
	}
	if r.stats.initialAdds != int64(len(r.after)) || r.stats.adds+r.stats.updates+r.stats.deletes != 0 {
		t.Errorf("handler counts: %d initial adds, %d adds, %d updates, %d deletes; want %d initial adds and nothing else",
			r.stats.initialAdds, r.stats.adds, r.stats.updates, r.stats.deletes, len(r.after))
	}
}

// TestWarmRestartWithinWatchWindow: stopped and restarted while the
// apiserver still holds the history since its persisted resourceVersion,
// the controller lists nothing but the resume check (the LIST of the 600
// pods' metadata: the version check): it resumes the watch, applies the
// changes made while it was down, and tells its handler the caught-up
// state as a cold start would.
func TestWarmRestartWithinWatchWindow(t *testing.T) {
	t.Parallel()
	ctx := needEnv(t)
	c, ns := sharedCluster(ctx, t, "warm")
	r := runRestart(ctx, t, c, ns, func() {})
	checkRestart(t, r)
	// The resume check's LIST, reading the server's resourceVersion
	// and, for a store of at most 5,000 objects, every object's metadata
	// (package reflector's version check, in restartChecks pages).
	if r.lists != restartChecks {
		t.Errorf("the apiserver served %v LIST requests for pods during the warm restart, want %v (the resume check)", r.lists, restartChecks)
	}
	if r.watchLists != 0 {
		t.Errorf("the apiserver served %v WatchList streams for pods during the warm restart, want 0", r.watchLists)
	}
	if r.stats.relists != 0 || r.stats.resumes != 1 || float64(r.stats.listRequests) != restartChecks {
		t.Errorf("informer metrics: %d relists, %d resumes, %d LIST requests; want 0, 1, %v", r.stats.relists, r.stats.resumes, r.stats.listRequests, restartChecks)
	}
	t.Logf("warm restart: %+v", r.stats)
}

// TestWarmRestartAfterExpiry: the persisted resourceVersion is gone from
// the server's history (etcd compacted with the watch cache off, or the
// apiserver restarted with an empty watch cache), so the resumed watch
// answers 410: the controller relists once, and its handler is told the
// relisted state as the initial list, as a cold start would.
//
// Each case has an apiserver of its own: it compacts etcd or restarts the
// apiserver.
func TestWarmRestartAfterExpiry(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name          string
		apiserverArgs []string
		expire        func(context.Context, *testing.T, *cluster)
	}{
		{"etcd compaction", []string{"--watch-cache=false"}, func(ctx context.Context, t *testing.T, c *cluster) {
			if _, err := c.env.Compact(ctx); err != nil {
				t.Fatal(err)
			}
		}},
		{"apiserver restart", nil, func(ctx context.Context, t *testing.T, c *cluster) {
			if err := c.env.RestartAPIServer(ctx); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := needEnv(t)
			c := startCluster(ctx, t, tc.apiserverArgs...)
			r := runRestart(ctx, t, c, "expired", func() { tc.expire(ctx, t, c) })
			checkRestart(t, r)
			if r.stats.relists != 1 {
				t.Errorf("%d relists, want 1", r.stats.relists)
			}
			// One relist, as the apiserver counted it: one WatchList
			// stream, or the pages of one LIST, and the informer's own
			// count of LIST requests agrees.
			// Besides the relist, the warm start made its resume
			// check (the version check's restartChecks LISTs).
			pages := math.Ceil(float64(len(r.after)) / 500)
			relistLists := r.lists - restartChecks
			oneStream := r.watchLists == 1 && relistLists == 0
			onePagedList := r.watchLists == 0 && relistLists >= 1 && relistLists <= pages
			if !oneStream && !onePagedList || float64(r.stats.listRequests) != r.lists {
				t.Errorf("the apiserver served %v WatchList streams and %v LIST requests besides the resume check (the informer counted %d LISTs in all); want one stream, or one list of at most %v pages",
					r.watchLists, relistLists, r.stats.listRequests, pages)
			}
			t.Logf("warm restart after %s: %+v, apiserver LIST %v, WatchList %v", tc.name, r.stats, r.lists, r.watchLists)
		})
	}
}
