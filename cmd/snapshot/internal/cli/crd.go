package cli

import (
	"context"
	"errors"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/warmcache/warmcache/cmd/snapshot/internal/printers"
	"github.com/warmcache/warmcache/store/bolt"
	"github.com/warmcache/warmcache/store/bolt/inspect"
)

// crdResource is the resource of CustomResourceDefinitions.
var crdResource = schema.GroupResource{Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions"}

// crdDef is what the CLI uses of a CRD held in the file.
type crdDef struct {
	kind string
	// scope is spec.scope: Namespaced or Cluster.
	scope string
	// columns are the additionalPrinterColumns by version name.
	columns map[string][]printers.PrinterColumn
}

// loadCRDs reads the CRDs the file holds, once, by group and plural. A
// file without CRDs, or whose CRDs cannot be read, has none: tables fall
// back to NAME and AGE.
func (f *snapshotFile) loadCRDs(ctx context.Context) map[schema.GroupResource]crdDef {
	if f.crds != nil {
		return f.crds
	}
	f.crds = map[schema.GroupResource]crdDef{}
	for _, info := range f.resources {
		id := info.Identity
		if info.Problem != "" || id.Group != crdResource.Group || id.Resource != crdResource.Resource {
			continue
		}
		st, err := f.store(ctx, info, true)
		if err != nil {
			continue
		}
		_ = st.Scan(ctx, func(_ string, obj interface{}) error {
			ro, ok := obj.(runtime.Object)
			if !ok {
				return nil
			}
			m, err := printers.Content(ro, schema.GroupVersionKind{})
			if err != nil {
				return nil
			}
			group, _, _ := unstructured.NestedString(m, "spec", "group")
			plural, _, _ := unstructured.NestedString(m, "spec", "names", "plural")
			kind, _, _ := unstructured.NestedString(m, "spec", "names", "kind")
			scope, _, _ := unstructured.NestedString(m, "spec", "scope")
			def := crdDef{kind: kind, scope: scope, columns: map[string][]printers.PrinterColumn{}}
			versions, _, _ := unstructured.NestedSlice(m, "spec", "versions")
			for _, v := range versions {
				vm, ok := v.(map[string]interface{})
				if !ok {
					continue
				}
				name, _, _ := unstructured.NestedString(vm, "name")
				cols, _, _ := unstructured.NestedSlice(vm, "additionalPrinterColumns")
				for _, c := range cols {
					cm, ok := c.(map[string]interface{})
					if !ok {
						continue
					}
					pc := printers.PrinterColumn{}
					pc.Name, _, _ = unstructured.NestedString(cm, "name")
					pc.Type, _, _ = unstructured.NestedString(cm, "type")
					pc.JSONPath, _, _ = unstructured.NestedString(cm, "jsonPath")
					if p, ok, _ := unstructured.NestedInt64(cm, "priority"); ok {
						pc.Priority = int32(p)
					}
					def.columns[name] = append(def.columns[name], pc)
				}
			}
			f.crds[schema.GroupResource{Group: group, Resource: plural}] = def
			return nil
		})
	}
	return f.crds
}

// printerColumns are the CRD printer columns of a custom resource, if the
// file holds its CRD.
func (f *snapshotFile) printerColumns(ctx context.Context, info inspect.ResourceInfo) []printers.PrinterColumn {
	id := info.Identity
	return f.loadCRDs(ctx)[schema.GroupResource{Group: id.Group, Resource: id.Resource}].columns[id.Version]
}

// deriveKinds fills in the kind of resources recorded without one (a
// dynamic informer's custom resources): from the file's CRD naming the
// resource, else from the first object's kind. The store of such a
// resource is still opened under its recorded identity (f.recorded).
func (f *snapshotFile) deriveKinds(ctx context.Context) {
	taken := map[string]bool{}
	for _, info := range f.resources {
		taken[info.Identity.String()] = true
	}
	for i := range f.resources {
		info := f.resources[i]
		if info.Problem != "" || info.Identity.Kind != "" || checkReadable(f.path, info) != nil {
			continue
		}
		id := info.Identity
		kind := f.loadCRDs(ctx)[schema.GroupResource{Group: id.Group, Resource: id.Resource}].kind
		if kind == "" {
			kind = f.firstKind(ctx, info)
		}
		derived := id
		derived.Kind = kind
		if kind == "" || taken[derived.String()] {
			continue
		}
		f.recorded[derived.String()] = id
		f.resources[i].Identity = derived
	}
}

// firstKind is the kind of the first object of a resource that records
// one, "" if none does.
func (f *snapshotFile) firstKind(ctx context.Context, info inspect.ResourceInfo) string {
	st, err := f.store(ctx, info, true)
	if err != nil {
		return ""
	}
	first, err := firstObject(ctx, st)
	if err != nil && !errors.Is(err, bolt.ErrCorrupt) || first == nil {
		return ""
	}
	if t, err := meta.TypeAccessor(first); err == nil {
		return t.GetKind()
	}
	return ""
}
