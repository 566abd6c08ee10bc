package storetest

import (
	"context"
	"errors"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"

	"github.com/warmcache/warmcache/store"
)

// selectPods is a small population with labels of every shape a selector
// tests: present, absent, several values.
func selectPods() []*corev1.Pod {
	var pods []*corev1.Pod
	apps := []string{"a", "b", "c"}
	for i, ns := range []string{"ns-1", "ns-2", "ns-3"} {
		for j := range 6 {
			opts := []podOpt{func(p *corev1.Pod) { p.Labels["app"] = apps[(i+j)%3] }}
			if j%2 == 0 {
				opts = append(opts, func(p *corev1.Pod) { p.Labels["tier"] = "web" })
			}
			if j%3 == 0 {
				opts = append(opts, users("alice"))
			}
			pods = append(pods, mkPod(ns, "p"+string(rune('a'+j)), "1", opts...))
		}
	}
	return pods
}

func mustSelector(t testing.TB, s string) labels.Selector {
	t.Helper()
	sel, err := labels.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return sel
}

// want computes a selection's result by brute force (users index
// values hold one user).
func want(pods []*corev1.Pod, sel store.Selection) []string {
	var out []string
	for _, p := range pods {
		if sel.Namespace != "" && p.Namespace != sel.Namespace {
			continue
		}
		if sel.Labels != nil && !sel.Labels.Matches(labels.Set(p.Labels)) {
			continue
		}
		if sel.Index == indexUsers && !slices.Contains([]string{p.Annotations[annotationUsers]}, sel.Value) {
			continue
		}
		if sel.Index == indexNamespace && p.Namespace != sel.Value {
			continue
		}
		k, _ := cache.DeletionHandlingMetaNamespaceKeyFunc(p)
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// assertSelect checks that Select of sel on s passes the keys of the pods
// of pods that sel matches, in key order; prefix starts the error.
func assertSelect(t *testing.T, s store.Store, pods []*corev1.Pod, sel store.Selection, prefix string) {
	t.Helper()
	if got, exp := selectKeys(t, s, sel), want(pods, sel); !slices.Equal(got, exp) {
		t.Errorf("%sSelect(ns=%q labels=%v index=%s=%s) = %q, want %q", prefix, sel.Namespace, sel.Labels, sel.Index, sel.Value, got, exp)
	}
}

func selectKeys(t *testing.T, s store.Store, sel store.Selection) []string {
	t.Helper()
	var keys []string
	_, pushdown := s.(store.SelectStore)
	var prev string
	err := store.Select(context.Background(), s, sel, func(key string, obj interface{}) error {
		k := keyOf(t, obj)
		if pushdown {
			if key != k {
				t.Errorf("Select passed key %q for object %q", key, k)
			}
			if key <= prev && prev != "" {
				t.Errorf("Select out of key order: %q after %q", key, prev)
			}
			prev = key
		}
		keys = append(keys, k)
		return nil
	})
	if err != nil {
		t.Fatalf("Select(%+v): %v", sel, err)
	}
	slices.Sort(keys)
	return keys
}

func testSelectMatchesFilter(t *testing.T, h harness) {
	pods := selectPods()
	s := h.open(t, nil, pods...)
	for _, sel := range []store.Selection{
		{},
		{Labels: labels.Everything()},
		{Namespace: "ns-2"},
		{Namespace: "absent"},
		{Labels: mustSelector(t, "app=a")},
		{Labels: mustSelector(t, "app!=a")},
		{Labels: mustSelector(t, "app in (a,b)")},
		{Labels: mustSelector(t, "app notin (a,b)")},
		{Labels: mustSelector(t, "tier")},
		{Labels: mustSelector(t, "!tier")},
		{Labels: mustSelector(t, "app=b,tier")},
		{Labels: mustSelector(t, "app=zzz")},
		{Namespace: "ns-1", Labels: mustSelector(t, "app=c,!tier")},
		{Index: indexUsers, Value: "alice"},
		{Index: indexUsers, Value: "alice", Namespace: "ns-3", Labels: mustSelector(t, "tier")},
		{Index: indexNamespace, Value: "ns-1", Labels: mustSelector(t, "app in (b)")},
	} {
		assertSelect(t, s, pods, sel, "")
	}
}

func testSelectWithoutNamespaceIndex(t *testing.T, h harness) {
	pods := selectPods()
	s := h.open(t, cache.Indexers{indexUsers: usersIndexFunc}, pods...)
	sel := store.Selection{Namespace: "ns-3", Labels: mustSelector(t, "app=a")}
	if got, exp := selectKeys(t, s, sel), want(pods, sel); !slices.Equal(got, exp) {
		t.Errorf("Select without a namespace index = %q, want %q", got, exp)
	}
}

func testSelectUnknownIndex(t *testing.T, h harness) {
	s := h.open(t, nil, selectPods()...)
	err := store.Select(context.Background(), s, store.Selection{Index: "nope", Value: "x"}, func(string, interface{}) error { return nil })
	if !errors.Is(err, store.ErrIndexNotFound) {
		t.Fatalf("Select on an unknown index = %v, want ErrIndexNotFound", err)
	}
}

func testSelectStopsAtCallbackError(t *testing.T, h harness) {
	s := h.open(t, nil, selectPods()...)
	stop := errors.New("stop")
	n := 0
	err := store.Select(context.Background(), s, store.Selection{}, func(string, interface{}) error {
		n++
		return stop
	})
	if !errors.Is(err, stop) || n != 1 {
		t.Fatalf("Select = %v after %d calls, want the callback's error after 1", err, n)
	}
}

// testSelectWithoutLabels: objects without labels (nil or empty), a
// cluster-scoped object and the empty key are selected as client-go's
// listers would select them, by every kind of selector.
func testSelectWithoutLabels(t *testing.T, h harness) {
	bare := mkPod("ns-1", "bare", "1", users("ernie"))
	bare.Labels = nil
	labelled := mkPod("ns-1", "labelled", "2", users("ernie"), func(p *corev1.Pod) { p.Labels["app"], p.Labels["tier"] = "a", "web" })
	empty := mkPod("", "", "3", users("ernie"))
	cluster := mkPod("", "node-like", "4", func(p *corev1.Pod) { p.Labels["app"] = "b" })
	other := mkPod("ns-2", "other", "5", func(p *corev1.Pod) { p.Labels["app"] = "" })
	pods := []*corev1.Pod{bare, labelled, empty, cluster, other}
	s := h.open(t, nil, pods...)
	for _, sel := range []store.Selection{
		{},
		{Labels: mustSelector(t, "app")},
		{Labels: mustSelector(t, "!app")},
		{Labels: mustSelector(t, "app=")},
		{Labels: mustSelector(t, "app!=a")},
		{Labels: mustSelector(t, "app notin (a)")},
		{Labels: mustSelector(t, "app in (a,b)")},
		{Labels: mustSelector(t, "tier in (web),app")},
		{Labels: labels.Nothing()},
		{Namespace: "ns-1"},
		{Namespace: "ns-1", Labels: mustSelector(t, "!tier")},
		{Index: indexNamespace, Value: ""},
		{Index: indexNamespace, Value: "", Labels: mustSelector(t, "!app")},
		{Index: indexUsers, Value: "ernie", Labels: mustSelector(t, "!app")},
		{Index: indexUsers, Value: "ernie", Namespace: "ns-1"},
	} {
		assertSelect(t, s, pods, sel, "")
	}
}

// testSelectFollowsWrites: a selection sees the labels and namespaces of
// the objects as last written, through updates that change labels or
// leave them, deletes and a relist.
func testSelectFollowsWrites(t *testing.T, h harness) {
	pods := selectPods()
	s := h.open(t, nil, pods...)
	check := func(stage string, pods []*corev1.Pod) {
		t.Helper()
		for _, sel := range []store.Selection{
			{Labels: mustSelector(t, "app=a")},
			{Labels: mustSelector(t, "!tier")},
			{Namespace: "ns-2", Labels: mustSelector(t, "app in (b,z)")},
			{Index: indexUsers, Value: "alice", Labels: mustSelector(t, "tier")},
		} {
			assertSelect(t, s, pods, sel, stage+": ")
		}
	}
	check("added", pods)

	// Relabel every third pod, bump the others' resourceVersion only.
	for i, p := range pods {
		p = withRV(p, "2")
		if i%3 == 0 {
			p.Labels = map[string]string{"app": "z"}
		}
		pods[i] = p
		if err := s.Update(p); err != nil {
			t.Fatalf("Update: %v", err)
		}
	}
	check("updated", pods)

	for _, p := range pods[:4] {
		if err := s.Delete(p); err != nil {
			t.Fatalf("Delete: %v", err)
		}
	}
	pods = pods[4:]
	check("deleted", pods)

	relisted := selectPods()[:9]
	objs := make([]interface{}, len(relisted))
	for i, p := range relisted {
		objs[i] = p
	}
	if err := s.Replace(objs, "9"); err != nil {
		t.Fatalf("Replace: %v", err)
	}
	check("relisted", relisted)
}
