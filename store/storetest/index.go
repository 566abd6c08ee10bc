package storetest

import (
	"errors"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/warmcache/warmcache/store"
)

// usersFixture is the store of client-go's TestMultiIndexKeys.
func usersFixture(t *testing.T, h harness) (store.Store, map[string]*corev1.Pod) {
	s := h.open(t, nil)
	pods := map[string]*corev1.Pod{
		"one":  mkPod("ns", "one", "1", users("ernie,bert")),
		"two":  mkPod("ns", "two", "2", users("bert,oscar")),
		"tre":  mkPod("other", "tre", "3", users("ernie,elmo")),
		"none": mkPod("other", "none", "4"),
	}
	for _, name := range []string{"one", "two", "tre", "none"} {
		mustAdd(t, s, pods[name])
	}
	return s, pods
}

func testIndexQueries(t *testing.T, h harness) {
	s, pods := usersFixture(t, h)
	byUser := []struct {
		value string
		want  []*corev1.Pod
	}{
		{"ernie", []*corev1.Pod{pods["one"], pods["tre"]}},
		{"bert", []*corev1.Pod{pods["one"], pods["two"]}},
		{"elmo", []*corev1.Pod{pods["tre"]}},
		{"oscar", []*corev1.Pod{pods["two"]}},
		{"elmo1", nil},
		{"", nil},
	}
	for _, tc := range byUser {
		t.Run("byUser="+tc.value, func(t *testing.T) {
			got, err := s.ByIndex(indexUsers, tc.value)
			if err != nil {
				t.Fatalf("ByIndex: %v", err)
			}
			assertObjects(t, "ByIndex", got, tc.want...)
			keys, err := s.IndexKeys(indexUsers, tc.value)
			if err != nil {
				t.Fatalf("IndexKeys: %v", err)
			}
			want := keysOfPods(t, tc.want)
			slices.Sort(want)
			// client-go returns IndexKeys sorted.
			if !slices.Equal(keys, want) {
				t.Errorf("IndexKeys = %q, want %q (sorted)", keys, want)
			}
		})
	}
	assertKeys(t, "ListIndexFuncValues(byUser)", s.ListIndexFuncValues(indexUsers), "ernie", "bert", "elmo", "oscar")
	assertKeys(t, "ListIndexFuncValues(namespace)", s.ListIndexFuncValues(indexNamespace), "ns", "other")

	// Index returns the objects sharing at least one value with the given
	// object, each once.
	index := []struct {
		name  string
		probe *corev1.Pod
		index string
		want  []*corev1.Pod
	}{
		{"one value", mkPod("x", "probe", "", users("oscar")), indexUsers, []*corev1.Pod{pods["two"]}},
		{"overlapping values", mkPod("x", "probe", "", users("ernie,bert")), indexUsers, []*corev1.Pod{pods["one"], pods["two"], pods["tre"]}},
		{"unknown value", mkPod("x", "probe", "", users("nobody")), indexUsers, nil},
		{"no values", mkPod("x", "probe", ""), indexUsers, nil},
		{"namespace", mkPod("other", "probe", ""), indexNamespace, []*corev1.Pod{pods["tre"], pods["none"]}},
	}
	for _, tc := range index {
		t.Run("Index/"+tc.name, func(t *testing.T) {
			got, err := s.Index(tc.index, tc.probe)
			if err != nil {
				t.Fatalf("Index: %v", err)
			}
			assertObjects(t, "Index", got, tc.want...)
		})
	}
}

func testUnknownIndex(t *testing.T, h harness) {
	s, _ := usersFixture(t, h)
	probe := mkPod("ns", "one", "")
	checks := []struct {
		name string
		err  func() error
	}{
		{"Index", func() error { _, err := s.Index("nope", probe); return err }},
		{"IndexKeys", func() error { _, err := s.IndexKeys("nope", "ns"); return err }},
		{"ByIndex", func() error { _, err := s.ByIndex("nope", "ns"); return err }},
	}
	for _, c := range checks {
		if err := c.err(); !errors.Is(err, store.ErrIndexNotFound) {
			t.Errorf("%s on an unknown index = %v, want ErrIndexNotFound", c.name, err)
		}
	}
	if got := s.ListIndexFuncValues("nope"); len(got) != 0 {
		t.Errorf("ListIndexFuncValues(unknown) = %q, want empty", got)
	}
}

// testMultiValueIndex follows client-go's
// TestThreadSafeStoreIndexingFunctionsWithMultipleValues: objects move
// between the sets of a multi-value index as they change.
func testMultiValueIndex(t *testing.T, h harness) {
	s := h.open(t, nil)
	type want map[string][]string // value -> keys
	steps := []struct {
		name string
		do   func() error
		want want
	}{
		{"add key1=foo key2=bar", func() error {
			return errors.Join(s.Add(mkPod("n", "key1", "1", users("foo"))), s.Add(mkPod("n", "key2", "2", users("bar"))))
		}, want{"foo": {"n/key1"}, "bar": {"n/key2"}}},
		{"update key2=foo,bar", func() error { return s.Update(mkPod("n", "key2", "3", users("foo,bar"))) },
			want{"foo": {"n/key1", "n/key2"}, "bar": {"n/key2"}}},
		{"update key1=foo,bar", func() error { return s.Update(mkPod("n", "key1", "4", users("foo,bar"))) },
			want{"foo": {"n/key1", "n/key2"}, "bar": {"n/key1", "n/key2"}}},
		{"add key3=foo,bar,baz", func() error { return s.Add(mkPod("n", "key3", "5", users("foo,bar,baz"))) },
			want{"foo": {"n/key1", "n/key2", "n/key3"}, "bar": {"n/key1", "n/key2", "n/key3"}, "baz": {"n/key3"}}},
		{"update key1=foo", func() error { return s.Update(mkPod("n", "key1", "6", users("foo"))) },
			want{"foo": {"n/key1", "n/key2", "n/key3"}, "bar": {"n/key2", "n/key3"}, "baz": {"n/key3"}}},
		{"update key2=bar", func() error { return s.Update(mkPod("n", "key2", "7", users("bar"))) },
			want{"foo": {"n/key1", "n/key3"}, "bar": {"n/key2", "n/key3"}, "baz": {"n/key3"}}},
		{"duplicate values key2=bar,bar,qux", func() error { return s.Update(mkPod("n", "key2", "8", users("bar,bar,qux"))) },
			want{"foo": {"n/key1", "n/key3"}, "bar": {"n/key2", "n/key3"}, "baz": {"n/key3"}, "qux": {"n/key2"}}},
		{"delete key1", func() error { return s.Delete(mkPod("n", "key1", "9")) },
			want{"foo": {"n/key3"}, "bar": {"n/key2", "n/key3"}, "baz": {"n/key3"}, "qux": {"n/key2"}}},
		{"delete key3", func() error { return s.Delete(mkPod("n", "key3", "10")) },
			want{"bar": {"n/key2"}, "qux": {"n/key2"}}},
		{"update key2 to no values", func() error { return s.Update(mkPod("n", "key2", "11")) },
			want{}},
	}
	for _, step := range steps {
		if err := step.do(); err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		var values []string
		for v, keys := range step.want {
			values = append(values, v)
			got, err := s.IndexKeys(indexUsers, v)
			if err != nil || !slices.Equal(got, keys) {
				t.Errorf("after %s: IndexKeys(%q) = %q, %v; want %q", step.name, v, got, err, keys)
			}
		}
		assertKeys(t, "after "+step.name+": ListIndexFuncValues", s.ListIndexFuncValues(indexUsers), values...)
	}
}

// testEmptiedSetsRemoved: an indexed value no object has any more is not
// listed (client-go removes emptied sets, kubernetes/kubernetes#84959).
func testEmptiedSetsRemoved(t *testing.T, h harness) {
	a1, a2, b := mkPod("a", "1", "1"), mkPod("a", "2", "2"), mkPod("b", "1", "3")
	s := h.open(t, nil, a1, a2, b)
	assertKeys(t, "ListIndexFuncValues", s.ListIndexFuncValues(indexNamespace), "a", "b")

	if err := s.Delete(b); err != nil {
		t.Fatal(err)
	}
	assertKeys(t, "after deleting b's only pod", s.ListIndexFuncValues(indexNamespace), "a")
	if keys, err := s.IndexKeys(indexNamespace, "b"); err != nil || len(keys) != 0 {
		t.Errorf("IndexKeys(b) = %q, %v; want none", keys, err)
	}

	if err := s.Delete(a1); err != nil {
		t.Fatal(err)
	}
	assertKeys(t, "after deleting one of a's pods", s.ListIndexFuncValues(indexNamespace), "a")

	// An update moving the last object off a value empties it too.
	mustAdd(t, s, mkPod("a", "3", "4", users("x")))
	if err := s.Update(mkPod("a", "3", "5", users("y"))); err != nil {
		t.Fatal(err)
	}
	assertKeys(t, "ListIndexFuncValues(byUser) after moving", s.ListIndexFuncValues(indexUsers), "y")
}

func testGetIndexers(t *testing.T, h harness) {
	s := h.open(t, pickyIndexers())
	got := s.GetIndexers()
	var names []string
	for name, fn := range got {
		names = append(names, name)
		if fn == nil {
			t.Errorf("GetIndexers()[%q] is nil", name)
		}
	}
	assertKeys(t, "GetIndexers names", names, indexNamespace, indexUsers, indexPicky)

	// Changing the returned map does not change the store.
	got["sneaky"] = cache.MetaNamespaceIndexFunc
	if _, ok := s.GetIndexers()["sneaky"]; ok {
		t.Error("adding to the map GetIndexers returned added an index to the store")
	}
}

func testAddIndexersAfterData(t *testing.T, h harness) {
	one, two := mkPod("ns", "one", "1", users("ernie,bert")), mkPod("ns", "two", "2", users("bert"))
	s := h.open(t, cache.Indexers{indexNamespace: cache.MetaNamespaceIndexFunc}, one, two)
	if _, err := s.ByIndex(indexUsers, "bert"); !errors.Is(err, store.ErrIndexNotFound) {
		t.Fatalf("ByIndex before AddIndexers = %v, want ErrIndexNotFound", err)
	}

	if err := s.AddIndexers(cache.Indexers{indexUsers: usersIndexFunc}); err != nil {
		t.Fatalf("AddIndexers: %v", err)
	}
	got, err := s.ByIndex(indexUsers, "bert")
	if err != nil {
		t.Fatal(err)
	}
	assertObjects(t, "ByIndex(byUser, bert) of existing items", got, one, two)
	assertKeys(t, "ListIndexFuncValues(byUser)", s.ListIndexFuncValues(indexUsers), "ernie", "bert")

	// Later writes maintain both the old and the new index.
	three := mkPod("other", "three", "3", users("ernie"))
	mustAdd(t, s, three)
	if err := s.Delete(one); err != nil {
		t.Fatal(err)
	}
	if keys, _ := s.IndexKeys(indexUsers, "ernie"); !slices.Equal(keys, []string{"other/three"}) {
		t.Errorf("IndexKeys(byUser, ernie) = %q", keys)
	}
	if keys, _ := s.IndexKeys(indexNamespace, "other"); !slices.Equal(keys, []string{"other/three"}) {
		t.Errorf("IndexKeys(namespace, other) = %q", keys)
	}
	assertKeys(t, "GetIndexers names", mapKeys(s.GetIndexers()), indexNamespace, indexUsers)

	// Adding no indexers is allowed.
	if err := s.AddIndexers(cache.Indexers{}); err != nil {
		t.Errorf("AddIndexers(empty): %v", err)
	}
}

func testAddIndexersConflict(t *testing.T, h harness) {
	s, _ := usersFixture(t, h)
	before, _ := s.IndexKeys(indexUsers, "ernie")
	// One new name, one existing: nothing is added.
	err := s.AddIndexers(cache.Indexers{"fresh": cache.MetaNamespaceIndexFunc, indexUsers: cache.MetaNamespaceIndexFunc})
	if !errors.Is(err, store.ErrIndexConflict) {
		t.Fatalf("AddIndexers with an existing name = %v, want ErrIndexConflict", err)
	}
	assertKeys(t, "GetIndexers names", mapKeys(s.GetIndexers()), indexNamespace, indexUsers)
	after, err := s.IndexKeys(indexUsers, "ernie")
	if err != nil || !slices.Equal(before, after) {
		t.Errorf("the existing index changed: IndexKeys(byUser, ernie) = %q, %v; was %q", after, err, before)
	}
}

func testAddIndexersFunctionError(t *testing.T, h harness) {
	s := h.open(t, cache.Indexers{indexNamespace: cache.MetaNamespaceIndexFunc}, mkPod("ns", "fine", "1"), mkPod("ns", "bad", "2", rejected()))
	err := s.AddIndexers(cache.Indexers{indexPicky: pickyIndexFunc})
	if !errors.Is(err, errRejected) {
		t.Fatalf("AddIndexers whose function rejects a stored object = %v, want the function's error", err)
	}
	if _, ok := s.GetIndexers()[indexPicky]; ok {
		t.Error("the failed index was added")
	}
	if _, err := s.ByIndex(indexPicky, "ns"); !errors.Is(err, store.ErrIndexNotFound) {
		t.Errorf("ByIndex on the failed index = %v, want ErrIndexNotFound", err)
	}
}

// testIndexFunctionErrorRejectsWrite: client-go panics when an index
// function fails; a warmcache store returns the error (wrapping the
// function's own) and changes nothing.
func testIndexFunctionErrorRejectsWrite(t *testing.T, h harness) {
	good := mkPod("ns", "good", "1", users("ernie"))
	s := h.open(t, pickyIndexers(), good)

	rejectedUpdate := withRV(good, "3")
	rejected()(rejectedUpdate)
	cases := []struct {
		name string
		do   func() error
	}{
		{"Add", func() error { return s.Add(mkPod("ns", "bad", "2", rejected())) }},
		{"Update of a stored object", func() error { return s.Update(rejectedUpdate) }},
		{"Replace", func() error {
			return s.Replace([]interface{}{mkPod("ns", "x", "4"), mkPod("ns", "bad", "5", rejected())}, "5")
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.do(); !errors.Is(err, errRejected) {
				t.Errorf("%s = %v, want the index function's error", tc.name, err)
			}
			assertStored(t, s, "1", good)
			if keys, _ := s.IndexKeys(indexPicky, "ns"); !slices.Equal(keys, []string{"ns/good"}) {
				t.Errorf("IndexKeys(picky, ns) = %q, want only ns/good", keys)
			}
		})
	}
	if _, err := s.Index(indexPicky, mkPod("ns", "probe", "", rejected())); !errors.Is(err, errRejected) {
		t.Errorf("Index with an object the function rejects = %v, want its error", err)
	}
}

func mapKeys(ix cache.Indexers) []string {
	out := make([]string, 0, len(ix))
	for k := range ix {
		out = append(out, k)
	}
	return out
}
