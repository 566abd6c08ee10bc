package cli

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/warmcache/warmcache/cmd/snapshot/internal/printers"
	"github.com/warmcache/warmcache/internal/podgen"
	"github.com/warmcache/warmcache/store/bolt"
	"github.com/warmcache/warmcache/store/bolt/inspect"
	"github.com/warmcache/warmcache/store/codec"
)

// sortWidgets are widgets whose spec.size mixes numbers (int64 and
// float64), strings, a boolean, an object, ties and absences, each with
// the place --sort-by .spec.size gives it: absent first, then numbers by
// value, then the others by text in natural order, ties in key order.
var sortWidgets = []struct {
	ns, name string
	size     interface{} // nil: no spec.size; "-": no spec
	place    int
}{
	{"lab", "w-a", int64(10), 6},
	{"lab", "w-b", int64(9), 4},
	{"lab", "w-c", 2.5, 3},
	{"lab", "w-d", "web-10", 11},
	{"lab", "w-e", "web-2", 10},
	{"lab", "w-f", nil, 0},
	{"lab", "w-g", true, 9},
	{"lab", "w-h", int64(9), 5},
	{"lab", "w-i", "10", 7},
	{"lab", "w-j", "-", 1},
	{"dev", "w-k", int64(1), 2},
	{"lab", "w-l", map[string]interface{}{"x": "y"}, 8},
}

// sortFixture writes a file of pods (podgen's, some without a node, a
// priority or the rank label, rank mixing numbers and names) and of the
// sortWidgets (unstructured), and returns its path.
func sortFixture(t testing.TB) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "sort.db")
	db, err := bolt.Open(context.Background(), path, bolt.Options{Logger: klog.Background(), Sync: bolt.UnsafeNoSync})
	if err != nil {
		t.Fatal(err)
	}
	var pods []interface{}
	for i := range 40 {
		p := podgen.Pod(i)
		p.TypeMeta = metav1.TypeMeta{}
		switch i % 4 {
		case 0:
			p.Spec.NodeName = ""
			delete(p.Labels, "rank")
		case 1:
			prio := int32(40 - i)
			p.Spec.Priority = &prio
			p.Labels["rank"] = fmt.Sprint(i % 7)
		case 2:
			p.Labels["rank"] = fmt.Sprintf("web-%d", i%11)
		case 3:
			p.Spec.Priority = nil
			p.Labels["rank"] = "web-2"
			p.Status.Phase = corev1.PodPending
		}
		pods = append(pods, p)
	}
	fill(t, db, podsID, codec.Protobuf(nil), cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}, pods, "100", 500)
	var widgets []interface{}
	for i, w := range sortWidgets {
		obj := map[string]interface{}{
			"apiVersion": "example.com/v1alpha1", "kind": "Widget",
			"metadata": map[string]interface{}{"namespace": w.ns, "name": w.name, "resourceVersion": fmt.Sprint(300 + i),
				"creationTimestamp": testNow.Add(-time.Duration(i%3) * time.Hour).Format(time.RFC3339)},
		}
		switch w.size {
		case nil:
			obj["spec"] = map[string]interface{}{"color": "red"}
		case "-":
		default:
			obj["spec"] = map[string]interface{}{"size": w.size}
		}
		widgets = append(widgets, &unstructured.Unstructured{Object: obj})
	}
	fill(t, db, widgetsID, codec.Unstructured(), nil, widgets, "400", 500)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// sortBothWays prints the objects of resource id sorted by sortBy with
// the printer of opts, twice: by the rows sortedRows renders in the pass
// that reads the sort values (what list prints with a printer of rows),
// and by the objects sorted reads again in order (what it prints with the
// other printers).
func sortBothWays(t *testing.T, path string, id bolt.Identity, sortBy string, opts printOptions) (rows, objects string) {
	t.Helper()
	ctx := context.Background()
	env := &Env{Now: func() time.Time { return testNow }}
	f, err := openSnapshot(ctx, env, path, openOptions{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer closeInto(f, &err)
	var info inspect.ResourceInfo
	for _, r := range f.resources {
		if r.Identity.Resource == id.Resource {
			info = r
		}
	}
	st, err := f.store(ctx, info, true)
	if err != nil {
		t.Fatal(err)
	}
	s, err := newSorter(sortBy)
	if err != nil {
		t.Fatal(err)
	}
	filter := &filterOptions{labels: labels.Everything(), fields: fields.Everything()}
	print := func(byRows bool) string {
		pr, err := opts.printer(env, kindOf(info.Identity), true, true, false, nil)
		if err != nil {
			t.Fatal(err)
		}
		var bad []badKey
		var count int
		seq := scanObjects(ctx, st, info, "", filter, nil, &count, &bad)
		var b bytes.Buffer
		if byRows {
			rp := pr.(printers.RowPrinter)
			err = rp.PrintRows(&b, s.sortedRows(info, seq, rp.Row))
		} else {
			err = pr.Print(&b, s.sorted(st, info, seq, &bad))
		}
		if err != nil || len(bad) > 0 {
			t.Fatalf("%s by rows %v: %v, unread %v", sortBy, byRows, err, bad)
		}
		return b.String()
	}
	return print(true), print(false)
}

// TestSortedRowsAsSortedObjects checks that a sorted list printed from
// rows rendered in the sorting pass (each object decoded once) is the
// list printed from the objects read again in order, byte for byte: for
// tables, wide tables, names and custom columns, on typed and unstructured
// objects, by fields that are strings, numbers, pointers, labels, mixed
// types, missing on some objects, or read by client-go's jsonpath.
func TestSortedRowsAsSortedObjects(t *testing.T) {
	path := sortFixture(t)
	unchanged(t, path)
	outputs := []printOptions{
		{Output: printers.Table},
		{Output: printers.Wide, ShowLabels: true},
		{Output: printers.Table, LabelColumns: []string{"rank"}, ShowKind: true, NoHeaders: true},
		{Output: printers.Name},
		{Output: "custom-columns=NAME:.metadata.name,NS:.metadata.namespace,SIZE:.spec.size,NODE:.spec.nodeName"},
	}
	for _, tt := range []struct {
		id    bolt.Identity
		paths []string
	}{
		{podsID, []string{".metadata.name", ".metadata.creationTimestamp", ".spec.nodeName", ".spec.priority", ".metadata.labels.rank",
			".status.phase", ".status.containerStatuses[0].restartCount", "{.spec.containers[*].name}", ".metadata.annotations.missing"}},
		{widgetsID, []string{".spec.size", ".metadata.name", ".spec", ".metadata.creationTimestamp", ".spec.color"}},
	} {
		for _, sortBy := range tt.paths {
			for _, opts := range outputs {
				t.Run(tt.id.Resource+" "+sortBy+" "+opts.Output, func(t *testing.T) {
					rows, objects := sortBothWays(t, path, tt.id, sortBy, opts)
					if rows != objects {
						t.Errorf("sorted rows:\n%s\nsorted objects:\n%s", rows, objects)
					}
					if strings.Count(rows, "\n") < 5 {
						t.Errorf("printed too little:\n%s", rows)
					}
				})
			}
		}
	}
}

// TestSortByMixedValues checks the order list --sort-by gives objects
// whose field holds numbers, strings and other values, or nothing.
func TestSortByMixedValues(t *testing.T) {
	path := sortFixture(t)
	want := make([]string, len(sortWidgets))
	for _, w := range sortWidgets {
		want[w.place] = "widget.example.com/" + w.name
	}
	for _, output := range []string{"name", "table", "json"} {
		t.Run(output, func(t *testing.T) {
			r := run(t, "list", path, "widgets", "-A", "--sort-by", ".spec.size", "-o", output)
			if r.code != ExitOK {
				t.Fatalf("exit %d: %s", r.code, r.stderr)
			}
			var got []string
			for _, line := range strings.Split(r.stdout, "\n") {
				for _, w := range sortWidgets {
					if f := strings.Fields(line); output == "name" && len(f) == 1 && f[0] == "widget.example.com/"+w.name ||
						output == "table" && len(f) > 1 && f[1] == w.name ||
						output == "json" && strings.TrimSpace(line) == `"name": "`+w.name+`",` {
						got = append(got, "widget.example.com/"+w.name)
					}
				}
			}
			if strings.Join(got, " ") != strings.Join(want, " ") {
				t.Errorf("order\n%s\nwant\n%s\noutput:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"), r.stdout)
			}
		})
	}
}
