package cli

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/klog/v2"

	"github.com/warmcache/warmcache/cmd/snapshot/internal/golden"
	"github.com/warmcache/warmcache/store/bolt"
	"github.com/warmcache/warmcache/store/codec"
)

// gadgetsID is a custom resource cached by a dynamic informer: no kind
// recorded.
var (
	gadgetsID = bolt.Identity{Group: "example.com", Version: "v1", Resource: "gadgets"}
	crdsID    = bolt.Identity{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions", Kind: "CustomResourceDefinition"}
)

// dynamicFile holds gadgets.example.com without a recorded kind and, with
// withCRD, its CRD with two printer columns.
func dynamicFile(t *testing.T, withCRD bool) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "dynamic.db")
	db, err := bolt.Open(context.Background(), path, bolt.Options{Logger: klog.Background(), Sync: bolt.UnsafeNoSync})
	if err != nil {
		t.Fatal(err)
	}
	var gadgets []interface{}
	for i := range 3 {
		gadgets = append(gadgets, &unstructured.Unstructured{Object: map[string]interface{}{
			"apiVersion": "example.com/v1", "kind": "Gadget",
			"metadata": map[string]interface{}{"namespace": "lab", "name": fmt.Sprintf("gizmo-%d", i), "resourceVersion": fmt.Sprint(10 + i),
				"creationTimestamp": testNow.Add(-time.Duration(i+1) * time.Hour).Format(time.RFC3339)},
			"spec":   map[string]interface{}{"size": int64(3 - i)},
			"status": map[string]interface{}{"phase": []string{"Ready", "Pending", "Ready"}[i]},
		}})
	}
	fill(t, db, gadgetsID, codec.Unstructured(), nil, gadgets, "12", 100)
	if withCRD {
		crd := &unstructured.Unstructured{Object: map[string]interface{}{
			"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
			"metadata": map[string]interface{}{"name": "gadgets.example.com", "resourceVersion": "5"},
			"spec": map[string]interface{}{
				"group": "example.com", "scope": "Namespaced",
				"names": map[string]interface{}{"plural": "gadgets", "singular": "gadget", "kind": "Gadget"},
				"versions": []interface{}{map[string]interface{}{"name": "v1", "served": true, "storage": true,
					"additionalPrinterColumns": []interface{}{
						map[string]interface{}{"name": "Size", "type": "integer", "jsonPath": ".spec.size"},
						map[string]interface{}{"name": "Phase", "type": "string", "jsonPath": ".status.phase", "priority": int64(1)},
					}}},
			},
		}}
		fill(t, db, crdsID, codec.Unstructured(), nil, []interface{}{crd}, "5", 100)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestDynamicResourceByKind checks that a resource recorded without a kind
// is found by its singular, its kind and kind.group, with the kind taken
// from its CRD or, without one, from its objects, and that its table has
// the CRD's printer columns.
func TestDynamicResourceByKind(t *testing.T) {
	for _, withCRD := range []bool{true, false} {
		t.Run(fmt.Sprintf("crd=%v", withCRD), func(t *testing.T) {
			path := dynamicFile(t, withCRD)
			unchanged(t, path)
			for _, arg := range []string{"gadget", "Gadget", "gadget.example.com", "gadgets", "gadgets.v1.example.com"} {
				r := run(t, "list", path, arg, "-n", "lab", "-o", "name")
				if r.code != ExitOK || r.stdout != "gadget.example.com/gizmo-0\ngadget.example.com/gizmo-1\ngadget.example.com/gizmo-2\n" {
					t.Errorf("list %s: exit %d, stdout %q, stderr %q", arg, r.code, r.stdout, r.stderr)
				}
			}
			r := run(t, "get", path, "gadget/gizmo-1", "-n", "lab", "-o", "name")
			if r.code != ExitOK || r.stdout != "gadget.example.com/gizmo-1\n" {
				t.Errorf("get: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
			}
			for _, format := range []string{"table", "wide"} {
				args := []string{"list", path, "gadgets", "-n", "lab", "-o", format}
				r := run(t, args...)
				golden.Check(t, fmt.Sprintf("dynamic-crd-%v-%s", withCRD, format), transcript(filepath.Dir(path), args, r))
			}
		})
	}
}
