package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/warmcache/warmcache/internal/demo"
	"github.com/warmcache/warmcache/internal/testenv"
)

// shared is the package's etcd and kube-apiserver, shared by the tests
// that neither restart, reconfigure nor rewind them (sharedCluster);
// TestMain stops it after the last test.
var shared = testenv.NewShared(testenv.Options{})

// cluster is a test's apiserver and clients.
type cluster struct {
	env        *testenv.Env
	shared     bool         // env is the package's shared one
	config     *rest.Config // protobuf, warnings off
	cs         kubernetes.Interface
	kubeconfig string // for child processes
}

// sharedCluster returns the package's shared apiserver, started by the
// first test that asks, and a namespace of the test's own named
// prefix-<generated>. Tests that share it may run in parallel: they work
// in their own namespace and count only its requests (listRequests,
// watchListRequests).
func sharedCluster(ctx context.Context, t *testing.T, prefix string) (*cluster, string) {
	t.Helper()
	c := newCluster(t, shared.Env(t))
	c.shared = true
	return c, c.env.Namespace(ctx, t, prefix)
}

// startCluster starts an environment of the test's own, with extra
// apiserver flags: for a test that restarts, reconfigures or rewinds it.
func startCluster(ctx context.Context, t *testing.T, apiserverArgs ...string) *cluster {
	t.Helper()
	env, err := testenv.Start(ctx, t, testenv.Options{ExtraAPIServerArgs: apiserverArgs})
	if err != nil {
		t.Fatalf("start kube-apiserver and etcd: %v", err)
	}
	return newCluster(t, env)
}

func newCluster(t *testing.T, env *testenv.Env) *cluster {
	t.Helper()
	c := &cluster{env: env, config: env.RestConfig()}
	c.config.ContentType = "application/vnd.kubernetes.protobuf"
	c.config.WarningHandler = rest.NoWarnings{} // podgen's pods repeat port names
	var err error
	if c.cs, err = kubernetes.NewForConfig(c.config); err != nil {
		t.Fatal(err)
	}
	c.kubeconfig = filepath.Join(t.TempDir(), "kubeconfig")
	if err := demo.WriteKubeconfig(env.RestConfig(), c.kubeconfig); err != nil {
		t.Fatal(err)
	}
	return c
}

// createPods creates namespace ns, unless it exists, and n pods in it,
// podgen's pods first ... first+n-1.
func (c *cluster) createPods(ctx context.Context, t *testing.T, ns string, first, n int) {
	t.Helper()
	if err := demo.EnsureNamespaces(ctx, c.cs, ns); err != nil {
		t.Fatal(err)
	}
	if err := demo.CreatePods(ctx, c.cs, n, demo.PodOptions{Namespace: ns, First: first, Workers: 8}); err != nil {
		t.Fatal(err)
	}
}

// listRequests returns how many LIST requests for resource in namespace
// ns the apiserver has received (from its audit log): the test's own,
// even on the shared apiserver.
func (c *cluster) listRequests(ctx context.Context, t *testing.T, resource, ns string) float64 {
	t.Helper()
	n, err := c.env.Requests(ctx, testenv.RequestFilter{Verb: "list", Resource: resource, Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	return float64(n)
}

// watchListRequests counts the WatchList streams for resource in
// namespace ns. On the test's own apiserver it counts completed streams
// (apiserver_watch_list_duration_seconds, observed when the initial events
// of a sendInitialEvents watch have been sent), of every namespace: the
// test is alone on it, and a stream the apiserver rejects (WatchList off,
// no watch cache) does not count. The shared apiserver's metric counts
// every test's streams, so there it counts the WatchList requests of ns
// (audit log), each attempt, completed or not.
func (c *cluster) watchListRequests(ctx context.Context, t *testing.T, resource, ns string) float64 {
	t.Helper()
	if c.shared {
		n, err := c.env.Requests(ctx, testenv.RequestFilter{Verb: "watchlist", Resource: resource, Namespace: ns})
		if err != nil {
			t.Fatal(err)
		}
		return float64(n)
	}
	n, err := c.env.MetricSum(ctx, "apiserver_watch_list_duration_seconds_count", map[string]string{"resource": resource})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// state maps object keys (namespace/name) to resourceVersions.
type state map[string]string

// diff describes how got differs from want, "" if they are equal.
func (s state) diff(want state) string {
	var out []string
	for k, rv := range want {
		switch got, ok := s[k]; {
		case !ok:
			out = append(out, fmt.Sprintf("missing %s@%s", k, rv))
		case got != rv:
			out = append(out, fmt.Sprintf("stale %s@%s, server has %s", k, got, rv))
		}
	}
	for k, rv := range s {
		if _, ok := want[k]; !ok {
			out = append(out, fmt.Sprintf("phantom %s@%s", k, rv))
		}
	}
	sort.Strings(out)
	if len(out) > 10 {
		out = append(out[:10], fmt.Sprintf("... %d more", len(out)-10))
	}
	return strings.Join(out, "; ")
}

// listPods lists the pods of ns (all namespaces for "") directly. It
// counts as LIST requests in the apiserver's metrics.
func (c *cluster) listPods(ctx context.Context, t *testing.T, ns string) state {
	t.Helper()
	s := state{}
	opts := metav1.ListOptions{Limit: 1000}
	for {
		l, err := c.cs.CoreV1().Pods(ns).List(ctx, opts)
		if err != nil {
			t.Fatalf("list pods: %v", err)
		}
		for i := range l.Items {
			s[l.Items[i].Namespace+"/"+l.Items[i].Name] = l.Items[i].ResourceVersion
		}
		if l.Continue == "" {
			return s
		}
		opts.Continue = l.Continue
	}
}

// changes are the changes made by change.
type changes struct {
	created state                // key -> resourceVersion
	updated map[string][2]string // key -> {old, new resourceVersion}
	deleted state                // key -> last resourceVersion before the delete
}

// change creates nCreate pods (podgen's first ... first+nCreate-1),
// updates nUpdate and deletes nDelete others of before (distinct, in key
// order), all in ns.
func (c *cluster) change(ctx context.Context, t *testing.T, ns string, before state, first, nCreate, nUpdate, nDelete int) changes {
	t.Helper()
	keys := make([]string, 0, len(before))
	for k := range before {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if nUpdate+nDelete > len(keys) {
		t.Fatalf("change: %d updates and %d deletes of %d objects", nUpdate, nDelete, len(keys))
	}
	ch := changes{created: state{}, updated: map[string][2]string{}, deleted: state{}}
	for i := range nCreate {
		p, err := c.cs.CoreV1().Pods(ns).Create(ctx, demo.NewPod(first+i, ns), metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create: %v", err)
		}
		ch.created[ns+"/"+p.Name] = p.ResourceVersion
	}
	for i, k := range keys[:nUpdate] {
		rv := c.touch(ctx, t, k, strconv.Itoa(i))
		ch.updated[k] = [2]string{before[k], rv}
	}
	for _, k := range keys[nUpdate : nUpdate+nDelete] {
		c.deletePod(ctx, t, k)
		ch.deleted[k] = before[k]
	}
	return ch
}

// touch sets a label on the pod of key and returns its new
// resourceVersion.
func (c *cluster) touch(ctx context.Context, t *testing.T, key, value string) string {
	t.Helper()
	ns, name, _ := strings.Cut(key, "/")
	patch := fmt.Sprintf(`{"metadata":{"labels":{"e2e-touched":%q}}}`, value)
	p, err := c.cs.CoreV1().Pods(ns).Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	if err != nil {
		t.Fatalf("update %s: %v", key, err)
	}
	return p.ResourceVersion
}

// deletePod deletes the pod of key at once (grace period 0: no kubelet
// would ever confirm a graceful delete).
func (c *cluster) deletePod(ctx context.Context, t *testing.T, key string) {
	t.Helper()
	ns, name, _ := strings.Cut(key, "/")
	if err := c.cs.CoreV1().Pods(ns).Delete(ctx, name, *metav1.NewDeleteOptions(0)); err != nil {
		t.Fatalf("delete %s: %v", key, err)
	}
}

// markerPod creates the pod "marker" in ns, whose updates tell when a
// controller has caught up: events are delivered in order.
func (c *cluster) markerPod(ctx context.Context, t *testing.T, ns string) string {
	t.Helper()
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "marker", Namespace: ns},
		Spec:       corev1.PodSpec{NodeName: "node-marker", Containers: []corev1.Container{{Name: "c", Image: "marker"}}},
	}
	if _, err := c.cs.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create the marker pod: %v", err)
	}
	return ns + "/marker"
}

// rvLess compares resourceVersions as the integers the apiserver makes
// them (clients may only compare them for equality, tests may do more).
func rvLess(a, b string) bool {
	x, errA := strconv.ParseUint(a, 10, 64)
	y, errB := strconv.ParseUint(b, 10, 64)
	return errA == nil && errB == nil && x < y
}
