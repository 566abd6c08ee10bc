package bolt

import (
	"context"
	"errors"
	"fmt"
	goruntime "runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	bbolt "go.etcd.io/bbolt"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"

	"github.com/warmcache/warmcache/store"
	"github.com/warmcache/warmcache/store/bolt/internal/layout"
	"github.com/warmcache/warmcache/store/codec"
)

// countingCodec counts the payloads it decodes.
type countingCodec struct {
	codec.Codec
	decoded atomic.Int64
}

func (c *countingCodec) Decode(data []byte) (runtime.Object, error) {
	c.decoded.Add(1)
	return c.Codec.Decode(data)
}

// selectPopulation is 3 namespaces of 200 pods with labels of every shape
// a selector tests: app in {a,b,c}, tier on every other pod, no labels at
// all on every seventh.
func selectPopulation() []*corev1.Pod {
	var pods []*corev1.Pod
	for _, ns := range []string{"ns-1", "ns-2", "ns-3"} {
		for i := range 200 {
			p := mkPod(ns, fmt.Sprintf("p%03d", i), "1")
			p.Labels = map[string]string{"app": string(rune('a' + i%3))}
			if i%2 == 0 {
				p.Labels["tier"] = "web"
			}
			if i%7 == 0 {
				p.Labels = nil
			}
			p.Spec.NodeName = fmt.Sprintf("node-%d", i%4)
			pods = append(pods, p)
		}
	}
	return pods
}

// wantSelected is a Selection's result by brute force, in key order.
func wantSelected(t *testing.T, pods []*corev1.Pod, sel store.Selection) []string {
	t.Helper()
	var out []string
	for _, p := range pods {
		ok, err := sel.Matches(p)
		must(t, err)
		if ok && (sel.Index == "" || sel.Index == "node" && p.Spec.NodeName == sel.Value) {
			out = append(out, p.Namespace+"/"+p.Name)
		}
	}
	slices.Sort(out)
	return out
}

func selectedKeys(t *testing.T, s *Store, sel store.Selection) []string {
	t.Helper()
	var keys []string
	err := s.Select(context.Background(), sel, func(key string, obj interface{}) error {
		p := obj.(*corev1.Pod)
		if k := p.Namespace + "/" + p.Name; k != key {
			t.Errorf("Select passed %q with the object of %q", key, k)
		}
		keys = append(keys, key)
		return nil
	})
	if err != nil {
		t.Fatalf("Select(%+v): %v", sel, err)
	}
	if !slices.IsSorted(keys) {
		t.Errorf("Select(%+v) out of key order: %q", sel, keys)
	}
	return keys
}

func parseSelector(t *testing.T, s string) labels.Selector {
	t.Helper()
	sel, err := labels.Parse(s)
	must(t, err)
	return sel
}

// TestSelectDecodesOnlyMatches checks selector pushdown: whatever the
// selection, the store decodes exactly the objects it returns, several
// chunks of them included.
func TestSelectDecodesOnlyMatches(t *testing.T) {
	db := openDB(t, tempPath(t), Options{Sync: UnsafeNoSync})
	c := &countingCodec{Codec: podCodec}
	ix := nodeIndexers()
	ix[cache.NamespaceIndex] = cache.MetaNamespaceIndexFunc
	s, err := db.Resource(context.Background(), ResourceOptions{Identity: podsID, Codec: c, Indexers: ix, HotBytes: ptrTo[int64](0)})
	must(t, err)
	pods := selectPopulation()
	objs := make([]interface{}, len(pods))
	for i, p := range pods {
		objs[i] = p
	}
	must(t, s.Replace(objs, "1"))
	for _, sel := range []store.Selection{
		{Namespace: "ns-2"},
		{Namespace: "ns-0"},
		{Labels: parseSelector(t, "app=a")},
		{Labels: parseSelector(t, "app==b,tier")},
		{Labels: parseSelector(t, "app!=a")},
		{Labels: parseSelector(t, "app in (a,c)")},
		{Labels: parseSelector(t, "app notin (a,c)")},
		{Labels: parseSelector(t, "tier")},
		{Labels: parseSelector(t, "!tier")},
		{Labels: parseSelector(t, "!app")},
		{Labels: labels.Nothing()},
		{Labels: labels.SelectorFromSet(labels.Set{"app": "c", "tier": "web"})},
		{Namespace: "ns-3", Labels: parseSelector(t, "app=b,!tier")},
		{Index: "node", Value: "node-1"},
		{Index: "node", Value: "node-2", Labels: parseSelector(t, "tier=web")},
		{Index: "node", Value: "node-3", Namespace: "ns-1", Labels: parseSelector(t, "app in (a,b)")},
		{Index: "node", Value: "none"},
	} {
		c.decoded.Store(0)
		got := selectedKeys(t, s, sel)
		if want := wantSelected(t, pods, sel); !slices.Equal(got, want) {
			t.Errorf("Select(ns=%q labels=%v index=%s=%s) = %d keys %q, want %d %q", sel.Namespace, sel.Labels, sel.Index, sel.Value, len(got), got, len(want), want)
		}
		if n := c.decoded.Load(); n != int64(len(got)) {
			t.Errorf("Select(ns=%q labels=%v index=%s=%s) decoded %d objects for %d results", sel.Namespace, sel.Labels, sel.Index, sel.Value, n, len(got))
		}
	}
}

// TestSelectPeeksTheObjectCache checks that a Select takes the objects
// the decoded-object cache holds from it without decoding them again, and
// neither fills the cache nor changes what it keeps.
func TestSelectPeeksTheObjectCache(t *testing.T) {
	db := openDB(t, tempPath(t), Options{Sync: UnsafeNoSync})
	c := &countingCodec{Codec: podCodec}
	// Room for the two objects read below and for what the writes leave
	// in probation.
	s, err := db.Resource(context.Background(), ResourceOptions{Identity: podsID, Codec: c, HotBytes: hotBudget(t, 4)})
	must(t, err)
	for i := range 10 {
		must(t, s.Add(mkPod("ns", fmt.Sprintf("p%d", i), "1")))
	}
	for _, key := range []string{"ns/p1", "ns/p2"} {
		if _, ok, err := s.GetByKey(key); err != nil || !ok {
			t.Fatalf("GetByKey(%s) = %t, %v", key, ok, err)
		}
	}
	c.decoded.Store(0)
	got := selectedKeys(t, s, store.Selection{Namespace: "ns", Labels: parseSelector(t, "app in (p1,p2,p3)")})
	if !slices.Equal(got, []string{"ns/p1", "ns/p2", "ns/p3"}) {
		t.Fatalf("Select = %q", got)
	}
	if n := c.decoded.Load(); n != 1 {
		t.Errorf("Select decoded %d objects, want 1 (the two others are cached)", n)
	}
	c.decoded.Store(0)
	for _, key := range []string{"ns/p1", "ns/p2"} {
		if _, ok, err := s.GetByKey(key); err != nil || !ok {
			t.Fatalf("GetByKey(%s) = %t, %v", key, ok, err)
		}
	}
	if n := c.decoded.Load(); n != 0 {
		t.Errorf("the point reads decoded %d objects after a Select: it evicted them", n)
	}
}

// TestSelectCustomKeyFunc checks selections by namespace under a key
// function whose keys do not start with the namespace, with and without a
// namespace index: the entry records the namespace the key does not name.
func TestSelectCustomKeyFunc(t *testing.T) {
	byName := func(obj interface{}) (string, error) {
		p := obj.(*corev1.Pod)
		return p.Name + "." + p.Namespace, nil
	}
	pods := selectPopulation()
	// A cluster-scoped looking name that the default derivation would
	// misread: its key holds a '/'.
	odd := mkPod("ns-2", "x/y", "1")
	for _, ix := range []cache.Indexers{nil, namespaceIndexers()} {
		t.Run(fmt.Sprintf("indexes=%d", len(ix)), func(t *testing.T) {
			db := openDB(t, tempPath(t), Options{Sync: UnsafeNoSync})
			s, err := db.Resource(context.Background(), ResourceOptions{Identity: podsID, Codec: podCodec, Indexers: ix, KeyFunc: byName})
			must(t, err)
			for _, p := range append(pods, odd) {
				must(t, s.Add(p))
			}
			for _, sel := range []store.Selection{
				{Namespace: "ns-2"},
				{Namespace: "ns-1", Labels: parseSelector(t, "app=a")},
				{Namespace: "x"},
				{Labels: parseSelector(t, "app=a")},
			} {
				var got []string
				must(t, s.Select(context.Background(), sel, func(key string, obj interface{}) error {
					got = append(got, key)
					return nil
				}))
				var want []string
				for _, p := range append(pods, odd) {
					if ok, _ := sel.Matches(p); ok {
						want = append(want, p.Name+"."+p.Namespace)
					}
				}
				slices.Sort(want)
				if !slices.Equal(got, want) {
					t.Errorf("Select(ns=%q labels=%v) = %d keys, want %d: %q", sel.Namespace, sel.Labels, len(got), len(want), got)
				}
			}
		})
	}
}

// TestSelectCorruptEntry checks that an item entry whose select part does
// not parse, and a selected object that does not decode, stop a Select
// with ErrCorrupt and mark the resource incomplete, as other reads do.
func TestSelectCorruptEntry(t *testing.T) {
	tests := []struct {
		name   string
		damage func(t *testing.T, g *layout.Generation)
		sel    store.Selection
	}{
		{"select part", func(t *testing.T, g *layout.Generation) {
			b := itemEntry(t, g, "ns/b")
			must(t, g.Items.Put([]byte("ns/b"), appendItemEntry("ns/b", b.ID, []byte{0xa5, 'x'}, b.Reverse)))
		}, store.Selection{Labels: parseSelector(t, "app=c")}},
		{"labels", func(t *testing.T, g *layout.Generation) {
			b := itemEntry(t, g, "ns/b")
			must(t, g.Items.Put([]byte("ns/b"), appendItemEntry("ns/b", b.ID, []byte{0xc0, 0x82, 0xa1, 'x'}, b.Reverse)))
		}, store.Selection{Namespace: "ns"}},
		{"selected payload", func(t *testing.T, g *layout.Generation) {
			setEnvelope(t, g, "ns/b", layout.EncodeEnvelope("ns/b", "2", "", []byte("garbage")))
		}, store.Selection{Labels: parseSelector(t, "app=b")}},
		{"index entry without item", func(t *testing.T, g *layout.Generation) {
			must(t, g.Index.Bucket([]byte(cache.NamespaceIndex)).Put(layout.IndexKey("ns", "ns/ghost"), nil))
		}, store.Selection{Index: cache.NamespaceIndex, Value: "ns", Labels: parseSelector(t, "app")}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := damagedPath(t)
			writeThreePods(t, path)
			rawUpdate(t, path, func(tx *bbolt.Tx) error {
				_, g := rawLive(t, tx)
				tc.damage(t, g)
				return nil
			})
			db := openDB(t, path, Options{Sync: UnsafeNoSync})
			var corrupted atomic.Int64
			s, err := db.Resource(context.Background(), ResourceOptions{Identity: podsID, Codec: podCodec, Indexers: namespaceIndexers(),
				OnCorruption: func(error) { corrupted.Add(1) }})
			must(t, err)
			err = s.Select(context.Background(), tc.sel, func(string, interface{}) error { return nil })
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("Select over a damaged %s = %v, want ErrCorrupt", tc.name, err)
			}
			if tc.name == "index entry without item" {
				return // as ScanIndex: the index, not an object, is damaged
			}
			if st := mustState(t, s); st.Complete || corrupted.Load() != 1 {
				t.Errorf("after the damaged %s: complete %t, OnCorruption called %d times; want incomplete, once", tc.name, st.Complete, corrupted.Load())
			}
		})
	}
}

// TestSelectContextAndCallback checks that Select honours a cancelled
// context and stops at its callback's first error, past the first chunk.
func TestSelectContextAndCallback(t *testing.T) {
	db := openDB(t, tempPath(t), Options{Sync: UnsafeNoSync})
	s := openPods(t, db, nil)
	for i := range 600 {
		must(t, s.Add(mkPod("ns", fmt.Sprintf("p%03d", i), "1")))
	}
	sel := store.Selection{Namespace: "ns"}
	ctx, cancel := context.WithCancel(context.Background())
	n := 0
	err := s.Select(ctx, sel, func(string, interface{}) error {
		if n++; n == 300 {
			cancel()
		}
		return nil
	})
	if !errors.Is(err, context.Canceled) || n != 300 {
		t.Errorf("Select cancelled after 300 objects = %v after %d calls, want context.Canceled after 300", err, n)
	}
	stop := errors.New("stop")
	n = 0
	err = s.Select(context.Background(), sel, func(string, interface{}) error {
		if n++; n == 400 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) || n != 400 {
		t.Errorf("Select = %v after %d calls, want the callback's error after 400", err, n)
	}
}

// TestSelectEntryFollowsLabels checks the write path of the select part:
// an update whose labels changed rewrites the item entry under the same
// blob id and the next Select sees the new labels; one that changes
// neither labels nor index values leaves the entry as it was.
func TestSelectEntryFollowsLabels(t *testing.T) {
	db := openDB(t, tempPath(t), Options{Sync: UnsafeNoSync})
	s := openPods(t, db, nodeIndexers())
	must(t, s.Add(mkPod("ns", "a", "1")))
	entry1, _ := rawItem(t, db, "ns/a")
	relabelled := mkPod("ns", "a", "2")
	relabelled.Labels = map[string]string{"app": "other", "tier": "db"}
	must(t, s.Update(relabelled))
	entry2, _ := rawItem(t, db, "ns/a")
	if string(entry2[:layout.BlobIDLen]) != string(entry1[:layout.BlobIDLen]) || string(entry2) == string(entry1) {
		t.Errorf("relabelling: entry %x, was %x; want a new select part under the same blob id", entry2, entry1)
	}
	if got := selectedKeys(t, s, store.Selection{Labels: parseSelector(t, "app=other,tier=db")}); !slices.Equal(got, []string{"ns/a"}) {
		t.Errorf("Select(app=other,tier=db) after relabelling = %q", got)
	}
	if got := selectedKeys(t, s, store.Selection{Labels: parseSelector(t, "app=a")}); len(got) != 0 {
		t.Errorf("Select(app=a) after relabelling = %q, want none", got)
	}
	same := relabelled.DeepCopy()
	same.ResourceVersion = "3"
	must(t, s.Update(same))
	if entry3, _ := rawItem(t, db, "ns/a"); string(entry3) != string(entry2) {
		t.Errorf("an update with the same labels and index values changed the entry: %x, was %x", entry3, entry2)
	}
	unlabelled := mkPod("ns", "a", "4")
	unlabelled.Labels = nil
	must(t, s.Update(unlabelled))
	if got := selectedKeys(t, s, store.Selection{Labels: parseSelector(t, "!app")}); !slices.Equal(got, []string{"ns/a"}) {
		t.Errorf("Select(!app) after removing the labels = %q", got)
	}
	verifyClean(t, db)
}

// noMeta is a runtime.Object without object metadata.
type noMeta struct {
	Value string
}

func (n *noMeta) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }
func (n *noMeta) DeepCopyObject() runtime.Object   { c := *n; return &c }

// noMetaCodec stores noMeta values as their string.
type noMetaCodec struct{}

func (noMetaCodec) Name() string { return "test-no-meta" }
func (noMetaCodec) Encode(dst []byte, obj runtime.Object) ([]byte, error) {
	return append(dst, obj.(*noMeta).Value...), nil
}
func (noMetaCodec) Decode(data []byte) (runtime.Object, error) {
	return &noMeta{Value: string(data)}, nil
}

// TestSelectObjectsWithoutMetadata checks that objects without metadata
// (stored under a custom key function) are selected by a selection
// without a namespace or labels, and fail one with either, as
// store.Selection.Matches does.
func TestSelectObjectsWithoutMetadata(t *testing.T) {
	db := openDB(t, uncheckedDir(t)+"/cache.db", Options{Sync: UnsafeNoSync})
	s, err := db.Resource(context.Background(), ResourceOptions{
		Identity: Identity{Version: "v1", Resource: "things"}, Codec: noMetaCodec{},
		KeyFunc:  func(obj interface{}) (string, error) { return obj.(*noMeta).Value, nil },
		Indexers: cache.Indexers{"first": func(obj interface{}) ([]string, error) { return []string{obj.(*noMeta).Value[:1]}, nil }},
	})
	must(t, err)
	must(t, s.Add(&noMeta{"a/1"}))
	must(t, s.Add(&noMeta{"b"}))
	for _, sel := range []store.Selection{{}, {Labels: labels.Everything()}, {Index: "first", Value: "a"}} {
		var got []string
		must(t, s.Select(context.Background(), sel, func(key string, obj interface{}) error {
			got = append(got, obj.(*noMeta).Value)
			return nil
		}))
		want := []string{"a/1", "b"}
		if sel.Index != "" {
			want = want[:1]
		}
		if !slices.Equal(got, want) {
			t.Errorf("Select(%+v) = %q, want %q", sel, got, want)
		}
	}
	for _, sel := range []store.Selection{{Namespace: "a"}, {Labels: parseSelector(t, "x")}} {
		err := s.Select(context.Background(), sel, func(string, interface{}) error { return nil })
		if err == nil || !strings.Contains(err.Error(), "no metadata") || errors.Is(err, ErrCorrupt) {
			t.Errorf("Select(%+v) over objects without metadata = %v, want a no-metadata error", sel, err)
		}
	}
}

// BenchmarkSelect measures selections of the benchmark pods: a
// cluster-wide label selector (a walk of every item entry and the decoding
// of the few matches), a namespace and a selector within a namespace.
func BenchmarkSelect(b *testing.B) {
	db := openDB(b, tempPath(b), Options{Sync: UnsafeNoSync})
	s := openPods(b, db, namespaceIndexers())
	benchFill(b, s)
	app5, err := labels.Parse("app.kubernetes.io/name=app-5")
	must(b, err)
	for _, bc := range []struct {
		name string
		sel  store.Selection
	}{
		{"cluster-selector", store.Selection{Labels: app5}},
		{"cluster-nothing", store.Selection{Labels: labels.SelectorFromSet(labels.Set{"app.kubernetes.io/name": "none"})}},
		{"namespace", store.Selection{Namespace: "ns-007"}},
		{"namespace-selector", store.Selection{Namespace: "ns-007", Labels: app5}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			goruntime.GC()
			b.ReportAllocs()
			defer reportCPU(b, cpuTime())
			n := 0
			for b.Loop() {
				n = 0
				must(b, s.Select(context.Background(), bc.sel, func(string, interface{}) error { n++; return nil }))
			}
			b.ReportMetric(float64(n), "objects")
		})
	}
}

// TestSelectAcrossTransactions checks that a walk longer than one read
// transaction (selectExamine entries) resumes where it stopped, in each
// source: every entry, a namespace's key range and an index.
func TestSelectAcrossTransactions(t *testing.T) {
	db := openDB(t, tempPath(t), Options{Sync: UnsafeNoSync})
	s := openPods(t, db, nodeIndexers())
	n := 2*selectExamine + 100
	pods := make([]*corev1.Pod, 0, n)
	objs := make([]interface{}, 0, n)
	for i := range n {
		ns := "ns-a"
		if i >= selectExamine/2 {
			ns = "ns-b"
		}
		p := mkPod(ns, fmt.Sprintf("p%05d", i), "1")
		if i%97 == 0 || i == selectExamine || i == selectExamine+1 {
			p.Labels["rare"] = "yes"
		}
		pods = append(pods, p)
		objs = append(objs, p)
	}
	must(t, s.Replace(objs, "1"))
	for _, sel := range []store.Selection{
		{Labels: parseSelector(t, "rare")},
		{Namespace: "ns-b", Labels: parseSelector(t, "rare=yes")},
		{Index: "node", Value: "node-1", Labels: parseSelector(t, "rare")},
		{Namespace: "ns-b", Labels: parseSelector(t, "!rare")},
	} {
		if got, want := selectedKeys(t, s, sel), wantSelected(t, pods, sel); !slices.Equal(got, want) {
			t.Errorf("Select(ns=%q labels=%v index=%s=%s) = %d keys, want %d", sel.Namespace, sel.Labels, sel.Index, sel.Value, len(got), len(want))
		}
	}
}
