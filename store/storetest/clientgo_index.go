package storetest

// Ports client-go's tools/cache/index_test.go at v0.36.3, with the
// cluster-scoped pods and index functions of the original. Adapted: every
// error client-go's test ignores is checked. Added: the cases of the
// same index functions client-go's tests leave out (an object whose index
// function yields the empty value, an Index probe with duplicate values).

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/tools/cache"

	"github.com/warmcache/warmcache/store"
)

func cgTestIndexFunc(obj interface{}) ([]string, error) {
	pod := obj.(*corev1.Pod)
	return []string{pod.Labels["foo"]}, nil
}

// cgTestUsersIndexFunc is client-go's testUsersIndexFunc: a pod without
// the annotation is filed under the empty value (strings.Split of "").
func cgTestUsersIndexFunc(obj interface{}) ([]string, error) {
	pod := obj.(*corev1.Pod)
	usersString := pod.Annotations["users"]
	return strings.Split(usersString, ","), nil
}

// cgPod is a cluster-scoped pod as client-go's index tests make them.
func cgPod(name string, labels, annotations map[string]string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels, Annotations: annotations},
	}
}

func testCGGetIndexFuncValues(t *testing.T, h cgHarness) {
	index := h.open(t, cache.MetaNamespaceKeyFunc, cache.Indexers{"testmodes": cgTestIndexFunc})

	pod1 := cgPod("one", map[string]string{"foo": "bar"}, nil)
	pod2 := cgPod("two", map[string]string{"foo": "bar"}, nil)
	pod3 := cgPod("tre", map[string]string{"foo": "biz"}, nil)

	mustDo(t, "Add one", index.Add(pod1))
	mustDo(t, "Add two", index.Add(pod2))
	mustDo(t, "Add tre", index.Add(pod3))

	keys := index.ListIndexFuncValues("testmodes")
	if len(keys) != 2 {
		t.Errorf("Expected 2 keys but got %v", len(keys))
	}
	for _, key := range keys {
		if key != "bar" && key != "biz" {
			t.Errorf("Expected only 'bar' or 'biz' but got %s", key)
		}
	}
}

func testCGMultiIndexKeys(t *testing.T, h cgHarness) {
	index := h.open(t, cache.MetaNamespaceKeyFunc, cache.Indexers{"byUser": cgTestUsersIndexFunc})

	pod1 := cgPod("one", nil, map[string]string{"users": "ernie,bert"})
	pod2 := cgPod("two", nil, map[string]string{"users": "bert,oscar"})
	pod3 := cgPod("tre", nil, map[string]string{"users": "ernie,elmo"})

	mustDo(t, "Add one", index.Add(pod1))
	mustDo(t, "Add two", index.Add(pod2))
	mustDo(t, "Add tre", index.Add(pod3))

	expected := map[string]sets.Set[string]{}
	expected["ernie"] = sets.New("one", "tre")
	expected["bert"] = sets.New("one", "two")
	expected["elmo"] = sets.New("tre")
	expected["oscar"] = sets.New("two")
	expected["elmo1"] = sets.Set[string]{}
	for k, v := range expected {
		found := sets.Set[string]{}
		indexResults, err := index.ByIndex("byUser", k)
		if err != nil {
			t.Errorf("Unexpected error %v", err)
		}
		for _, item := range indexResults {
			found.Insert(item.(*corev1.Pod).Name)
		}
		if !found.Equal(v) {
			t.Errorf("missing items, index %s, expected %v but found %v", k, sets.List(v), sets.List(found))
		}
	}

	mustDo(t, "Delete tre", index.Delete(pod3))
	erniePods, err := index.ByIndex("byUser", "ernie")
	if err != nil {
		t.Errorf("unexpected error: %v", err)
	}
	if len(erniePods) != 1 {
		t.Errorf("Expected 1 pods but got %v", len(erniePods))
	}
	for _, erniePod := range erniePods {
		if erniePod.(*corev1.Pod).Name != "one" {
			t.Errorf("Expected only 'one' but got %s", erniePod.(*corev1.Pod).Name)
		}
	}

	elmoPods, err := index.ByIndex("byUser", "elmo")
	if err != nil {
		t.Errorf("unexpected error: %v", err)
	}
	if len(elmoPods) != 0 {
		t.Errorf("Expected 0 pods but got %v", len(elmoPods))
	}

	copyOfPod2 := pod2.DeepCopy()
	copyOfPod2.Annotations["users"] = "oscar"
	mustDo(t, "Update two", index.Update(copyOfPod2))
	bertPods, err := index.ByIndex("byUser", "bert")
	if err != nil {
		t.Errorf("unexpected error: %v", err)
	}
	if len(bertPods) != 1 {
		t.Errorf("Expected 1 pods but got %v", len(bertPods))
	}
	for _, bertPod := range bertPods {
		if bertPod.(*corev1.Pod).Name != "one" {
			t.Errorf("Expected only 'one' but got %s", bertPod.(*corev1.Pod).Name)
		}
	}
}

// testCGEmptyIndexValue: with client-go's testUsersIndexFunc a pod without
// users is filed under "", which client-go lists and serves like any
// other value, and an update that gives it users removes that entry.
func testCGEmptyIndexValue(t *testing.T, h cgHarness) {
	index := h.open(t, cache.MetaNamespaceKeyFunc, cache.Indexers{"byUser": cgTestUsersIndexFunc})
	nobody := cgPod("nobody", nil, map[string]string{})
	one := cgPod("one", nil, map[string]string{"users": "ernie"})
	mustDo(t, "Add nobody", index.Add(nobody))
	mustDo(t, "Add one", index.Add(one))

	assertKeys(t, "ListIndexFuncValues(byUser)", index.ListIndexFuncValues("byUser"), "", "ernie")
	got, err := index.ByIndex("byUser", "")
	if err != nil {
		t.Fatalf(`ByIndex(byUser, ""): %v`, err)
	}
	if len(got) != 1 || got[0].(*corev1.Pod).Name != "nobody" {
		t.Errorf(`ByIndex(byUser, "") = %d objects, want nobody only`, len(got))
	}
	if keys, err := index.IndexKeys("byUser", ""); err != nil || len(keys) != 1 || keys[0] != "nobody" {
		t.Errorf(`IndexKeys(byUser, "") = %q, %v; want [nobody]`, keys, err)
	}
	// A probe without users finds the pods filed under "".
	if got, err := index.Index("byUser", cgPod("probe", nil, nil)); err != nil || len(got) != 1 || got[0].(*corev1.Pod).Name != "nobody" {
		t.Errorf(`Index(byUser, probe without users) = %d objects, %v; want nobody only`, len(got), err)
	}

	moved := nobody.DeepCopy()
	moved.Annotations["users"] = "bert"
	mustDo(t, "Update nobody", index.Update(moved))
	assertKeys(t, "ListIndexFuncValues(byUser) after update", index.ListIndexFuncValues("byUser"), "bert", "ernie")
	if keys, err := index.IndexKeys("byUser", ""); err != nil || len(keys) != 0 {
		t.Errorf(`IndexKeys(byUser, "") after update = %q, %v; want none`, keys, err)
	}
}

// testCGIndexProbeDuplicates: client-go's Index dedupes the keys of a
// probe with several values (getKeysFromIndex), repeated values included,
// and files an object whose values repeat once.
func testCGIndexProbeDuplicates(t *testing.T, h cgHarness) {
	index := h.open(t, cache.MetaNamespaceKeyFunc, cache.Indexers{"byUser": cgTestUsersIndexFunc})
	one := cgPod("one", nil, map[string]string{"users": "ernie,ernie"})
	two := cgPod("two", nil, map[string]string{"users": "bert"})
	mustDo(t, "Add one", index.Add(one))
	mustDo(t, "Add two", index.Add(two))

	cases := []struct {
		users string
		want  []string
	}{
		{"ernie,ernie", []string{"one"}},
		{"ernie,bert,ernie", []string{"one", "two"}},
		{"bert,bert", []string{"two"}},
	}
	for _, tc := range cases {
		got, err := index.Index("byUser", cgPod("probe", nil, map[string]string{"users": tc.users}))
		if err != nil {
			t.Errorf("Index(byUser, %s): %v", tc.users, err)
			continue
		}
		var names []string
		for _, obj := range got {
			names = append(names, obj.(*corev1.Pod).Name)
		}
		assertKeys(t, "Index(byUser, "+tc.users+")", names, tc.want...)
	}
	if got, err := index.ByIndex("byUser", "ernie"); err != nil || len(got) != 1 {
		t.Errorf("ByIndex(byUser, ernie) = %d objects, %v; want one", len(got), err)
	}
	if keys, err := index.IndexKeys("byUser", "ernie"); err != nil || len(keys) != 1 || keys[0] != "one" {
		t.Errorf("IndexKeys(byUser, ernie) = %q, %v; want [one]", keys, err)
	}
}

// testCGIndexNames: client-go's indexers are a map, and any string names
// an index, the empty one included, at NewIndexer and at AddIndexers.
func testCGIndexNames(t *testing.T, h cgHarness) {
	names := []string{"", "\x00", "\x00byUser", "a/b", "with space", "\xff"}
	initial := cache.Indexers{}
	for _, n := range names[:3] {
		initial[n] = cgTestUsersIndexFunc
	}
	index := h.open(t, cache.MetaNamespaceKeyFunc, initial)
	mustDo(t, "Add one", index.Add(cgPod("one", nil, map[string]string{"users": "ernie,bert"})))
	later := cache.Indexers{}
	for _, n := range names[3:] {
		later[n] = cgTestUsersIndexFunc
	}
	mustDo(t, "AddIndexers", index.AddIndexers(later))
	mustDo(t, "Add two", index.Add(cgPod("two", nil, map[string]string{"users": "bert"})))
	assertKeys(t, "GetIndexers names", mapKeys(index.GetIndexers()), names...)
	for _, n := range names {
		if keys, err := index.IndexKeys(n, "bert"); err != nil || len(keys) != 2 || keys[0] != "one" || keys[1] != "two" {
			t.Errorf("IndexKeys(%q, bert) = %q, %v; want [one two]", n, keys, err)
		}
		assertKeys(t, fmt.Sprintf("ListIndexFuncValues(%q)", n), index.ListIndexFuncValues(n), "ernie", "bert")
	}
	mustDo(t, "Replace", index.Replace([]interface{}{cgPod("three", nil, map[string]string{"users": "elmo"})}, "5"))
	for _, n := range names {
		if keys, err := index.IndexKeys(n, "elmo"); err != nil || len(keys) != 1 || keys[0] != "three" {
			t.Errorf("after Replace: IndexKeys(%q, elmo) = %q, %v; want [three]", n, keys, err)
		}
	}
}

// testCGLongIndexValue: client-go indexes values of any length. An
// annotation may hold up to 256 KiB, and an index function may return it
// (or any other long string) whole.
func testCGLongIndexValue(t *testing.T, h cgHarness) {
	index := h.open(t, cache.MetaNamespaceKeyFunc, cache.Indexers{"byUser": cgTestUsersIndexFunc})
	long := strings.Repeat("u", 200<<10)
	longer := long + "\x00\x01" + long
	mustDo(t, "Add one", index.Add(cgPod("one", nil, map[string]string{"users": long + ",ernie"})))
	mustDo(t, "Add two", index.Add(cgPod("two", nil, map[string]string{"users": longer})))
	mustDo(t, "Add tre", index.Add(cgPod("tre", nil, map[string]string{"users": long})))
	// A value sharing a long prefix with the long ones, and shorter ones.
	mustDo(t, "Add four", index.Add(cgPod("four", nil, map[string]string{"users": long[:len(long)-1] + "v"})))

	wantKeys := func(value string, want ...string) {
		t.Helper()
		keys, err := index.IndexKeys("byUser", value)
		if err != nil || !slices.Equal(keys, want) {
			t.Errorf("IndexKeys(byUser, %d-byte value) = %q, %v; want %q", len(value), keys, err, want)
		}
		objs, err := index.ByIndex("byUser", value)
		if err != nil || len(objs) != len(want) {
			t.Errorf("ByIndex(byUser, %d-byte value) = %d objects, %v; want %d", len(value), len(objs), err, len(want))
		}
	}
	wantKeys(long, "one", "tre")
	wantKeys(longer, "two")
	var selected []string
	if err := store.Select(context.Background(), index, store.Selection{Index: "byUser", Value: long}, func(key string, _ interface{}) error {
		selected = append(selected, key)
		return nil
	}); err != nil {
		t.Errorf("Select(byUser, long value): %v", err)
	}
	assertKeys(t, "Select(byUser, long value)", selected, "one", "tre")
	wantKeys(long[:len(long)-1]+"v", "four")
	wantKeys(long[:len(long)-1])
	wantKeys(long + "u")
	wantKeys("ernie", "one")
	values := index.ListIndexFuncValues("byUser")
	if len(values) != 4 {
		t.Errorf("ListIndexFuncValues(byUser) has %d values, want 4", len(values))
	}
	for _, v := range values {
		if v != long && v != longer && v != "ernie" && v != long[:len(long)-1]+"v" {
			t.Errorf("ListIndexFuncValues(byUser) has an unexpected %d-byte value", len(v))
		}
	}
	got, err := index.Index("byUser", cgPod("probe", nil, map[string]string{"users": longer + "," + long}))
	if err != nil || len(got) != 3 {
		t.Errorf("Index(byUser, probe of the two long values) = %d objects, %v; want 3", len(got), err)
	}

	// Updates and deletes remove the long entries.
	mustDo(t, "Update one", index.Update(cgPod("one", nil, map[string]string{"users": "ernie"})))
	mustDo(t, "Delete two", index.Delete(cgPod("two", nil, nil)))
	wantKeys(long, "tre")
	wantKeys(longer)
	mustDo(t, "Replace", index.Replace([]interface{}{cgPod("five", nil, map[string]string{"users": longer})}, "9"))
	wantKeys(long)
	wantKeys(longer, "five")
	assertKeys(t, "ListIndexFuncValues(byUser) after Replace", index.ListIndexFuncValues("byUser"), longer)
}
