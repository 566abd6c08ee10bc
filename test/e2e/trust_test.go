package e2e

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// kubeSystemUID returns the UID of the kube-system namespace, which the
// factory records as the cluster's identity.
func (c *cluster) kubeSystemUID(ctx context.Context, t *testing.T) string {
	t.Helper()
	ns, err := c.cs.CoreV1().Namespaces().Get(ctx, "kube-system", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return string(ns.UID)
}

// checkOnlyInitialAdds fails unless events hold one initial add per
// object of want and nothing else: no phantom, no event of the old data.
func checkOnlyInitialAdds(t *testing.T, events []event, want state) {
	t.Helper()
	initial, rest, err := split(events)
	if err != nil {
		t.Fatal(err)
	}
	if d := initial.diff(want); d != "" {
		t.Errorf("the initial list differs from the new cluster's pods: %s", d)
	}
	if len(rest) != 0 {
		t.Errorf("%d events after the initial list, want none: %v", len(rest), rest)
	}
}

// TestRecreatedClusterDiscards: a file written against one cluster, reused
// after the cluster was recreated at the same address with a fresh etcd
// (kind delete/create, a rebuilt CI cluster), is discarded before any of
// its objects is served: the kube-system namespace has another UID. The
// controller starts cold and its handler sees exactly the new cluster's
// pods, not one of the old ones.
func TestRecreatedClusterDiscards(t *testing.T) {
	t.Parallel()
	ctx := needEnv(t)
	c := startCluster(ctx, t)
	const ns = "recreated"
	c.createPods(ctx, t, ns, 0, 120)
	oldUID := c.kubeSystemUID(ctx, t)
	file := filepath.Join(t.TempDir(), "cache.db")
	opts := childOptions{kubeconfig: c.kubeconfig, cacheFile: file, namespace: ns}
	first := startChild(t, opts)
	first.waitConverged(ctx, c.listPods(ctx, t, ns))
	first.stop()

	if err := c.env.RestartWithEtcdData(ctx, ""); err != nil {
		t.Fatal(err)
	}
	// Fewer pods, other names: every stored pod would be a phantom.
	c.createPods(ctx, t, ns, 5000, 12)
	newUID := c.kubeSystemUID(ctx, t)
	if newUID == oldUID {
		t.Fatalf("kube-system kept its UID %s across a fresh etcd", oldUID)
	}
	want := c.listPods(ctx, t, ns)

	second := startChild(t, opts)
	if synced := second.waitSynced(ctx); synced.WarmStart {
		t.Error("the run against the recreated cluster reported a warm start")
	}
	second.waitConverged(ctx, want)
	_, events := second.stop()
	checkOnlyInitialAdds(t, events, want)
	if log := second.log(); !strings.Contains(log, "Discarded the cached data") || !strings.Contains(log, oldUID) || !strings.Contains(log, newUID) {
		t.Errorf("no log line of the discard naming both clusters (%s, %s); log:\n%s", oldUID, newUID, tail(second.logFile, 4096))
	}
	f := readCache(ctx, t, file, podsIdentity(ns))
	if d := f.items.diff(want); d != "" {
		t.Errorf("the cache file differs from the new cluster: %s", d)
	}
}

// TestRestoredEtcdRelists: etcd restored from an older backup keeps the
// cluster's identity but goes back in resourceVersions, so the stored RV
// is ahead of the server's, which would accept a watch from it and send
// nothing. The warm start detects it, relists the most recent state, and
// its handler ends with exactly the restored server's pods.
func TestRestoredEtcdRelists(t *testing.T) {
	t.Parallel()
	ctx := needEnv(t)
	c := startCluster(ctx, t)
	const ns = "restored"
	c.createPods(ctx, t, ns, 0, 40)
	backup, err := c.env.SaveEtcdData(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// After the backup: more pods, which the restore takes back.
	c.createPods(ctx, t, ns, 1000, 150)
	file := filepath.Join(t.TempDir(), "cache.db")
	opts := childOptions{kubeconfig: c.kubeconfig, cacheFile: file, namespace: ns}
	first := startChild(t, opts)
	first.waitConverged(ctx, c.listPods(ctx, t, ns))
	first.stop()
	stored := readCache(ctx, t, file, podsIdentity(ns))

	if err := c.env.RestartWithEtcdData(ctx, backup); err != nil {
		t.Fatal(err)
	}
	want := c.listPods(ctx, t, ns)
	if len(want) != 40 {
		t.Fatalf("the restored cluster holds %d pods, want 40", len(want))
	}
	l, err := c.cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	if !rvLess(l.ResourceVersion, stored.info.ResourceVersion) {
		t.Fatalf("the restored server is at RV %s, not behind the stored %s", l.ResourceVersion, stored.info.ResourceVersion)
	}

	second := startChild(t, opts)
	if synced := second.waitSynced(ctx); !synced.WarmStart {
		t.Error("the run on the same cluster's file reported a cold start")
	}
	second.waitConverged(ctx, want)
	st, events := second.stop()
	initial, rest, err := split(events)
	if err != nil {
		t.Fatal(err)
	}
	if d := fold(initial, rest).diff(want); d != "" {
		t.Errorf("the handler's view differs from the restored server: %s", d)
	}
	if st.Relists != 1 || st.Resumes != 0 {
		t.Errorf("informer metrics: %d relists, %d resumes; want 1 relist, no resume", st.Relists, st.Resumes)
	}
	if log := second.log(); !strings.Contains(log, "stored resourceVersion is ahead of the server's") {
		t.Errorf("no log line of the resourceVersion ahead of the server's; log:\n%s", tail(second.logFile, 4096))
	}
	f := readCache(ctx, t, file, podsIdentity(ns))
	if d := f.items.diff(want); d != "" {
		t.Errorf("the cache file differs from the restored server: %s", d)
	}
}

// TestWarmStartAtServerRVSyncsAtOnce: a warm start whose stored RV is the
// server's current one (nothing was written since) is synced as soon as
// the resumed watch is open, from the resume check's LIST, not after the
// ResumeSettle quiet timer. The apiserver runs without the background
// writers (apiserver identity leases, endpoint reconciler) that would move
// its RV on with nothing to do with the pods.
func TestWarmStartAtServerRVSyncsAtOnce(t *testing.T) {
	t.Parallel()
	ctx := needEnv(t)
	c := startCluster(ctx, t, "--feature-gates=APIServerIdentity=false,UnknownVersionInteroperabilityProxy=false", "--endpoint-reconciler-type=none")
	const ns = "quiet"
	c.createPods(ctx, t, ns, 0, 30)
	file := filepath.Join(t.TempDir(), "cache.db")
	opts := childOptions{kubeconfig: c.kubeconfig, cacheFile: file, namespace: ns}
	first := startChild(t, opts)
	want := c.listPods(ctx, t, ns)
	first.waitConverged(ctx, want)
	first.stop()
	stored := readCache(ctx, t, file, podsIdentity(ns))
	l, err := c.cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	if l.ResourceVersion != stored.info.ResourceVersion {
		t.Fatalf("the server is at RV %s, the file at %s: something wrote to the cluster", l.ResourceVersion, stored.info.ResourceVersion)
	}

	lists0 := c.listRequests(ctx, t, "pods", ns)
	second := startChild(t, opts)
	if synced := second.waitSynced(ctx); !synced.WarmStart {
		t.Error("the second run reported a cold start")
	}
	st, events := second.stop()
	if lists := c.listRequests(ctx, t, "pods", ns) - lists0; lists != 1 {
		t.Errorf("the apiserver served %v LIST requests for pods, want 1 (the resume check)", lists)
	}
	if st.Relists != 0 || st.Resumes != 1 {
		t.Errorf("informer metrics: %d relists, %d resumes; want 0 and 1", st.Relists, st.Resumes)
	}
	checkOnlyInitialAdds(t, events, want)
	if log := second.log(); !strings.Contains(log, "stored resourceVersion is the server's current one") {
		t.Errorf("the warm start did not sync from the resume check; log:\n%s", tail(second.logFile, 4096))
	}
}
