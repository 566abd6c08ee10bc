package factory

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
)

// crdGVR is the resource of CustomResourceDefinitions, watched (through
// the dynamic client, in memory) to refresh discovery when one changes.
var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// crdInformer returns the informer of CustomResourceDefinitions that
// wakes the loop on each change, nil when DiscoveryOptions.CRDs is false
// or there is no dynamic client. Its objects stay in memory: they are not
// the cluster's data the file caches, only what says when discovery
// changed. A deleted CRD's resource is marked gone at once, so that its
// informer stops even before discovery stops serving it.
func (d *Discovered) crdInformer() cache.Controller {
	if (d.opts.CRDs != nil && !*d.opts.CRDs) || d.f.opts.Dynamic == nil {
		return nil
	}
	logger := d.logger
	crds := d.f.opts.Dynamic.Resource(crdGVR)
	st, ctl := cache.NewInformerWithOptions(cache.InformerOptions{
		Logger: &logger,
		ListerWatcher: cache.ToListWatcherWithWatchListSemantics(&cache.ListWatch{
			ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
				return crds.List(ctx, o)
			},
			WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
				return crds.Watch(ctx, o)
			},
		}, d.f.opts.Dynamic),
		ObjectType: &unstructured.Unstructured{},
		Transform:  crdSummary,
		Handler: cache.ResourceEventHandlerFuncs{
			AddFunc: func(obj interface{}) {
				if gr, ok := crdResource(obj); ok {
					d.mu.Lock()
					delete(d.gone, gr)
					d.mu.Unlock()
				}
				d.wake()
			},
			UpdateFunc: func(_, obj interface{}) { d.wake() },
			DeleteFunc: func(obj interface{}) {
				if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
					obj = tomb.Obj
				}
				if gr, ok := crdResource(obj); ok {
					d.mu.Lock()
					d.gone[gr] = true
					d.mu.Unlock()
				}
				d.wake()
			},
		},
	})
	d.mu.Lock()
	d.crds, d.crdsSynced = st, ctl.HasSynced
	d.mu.Unlock()
	return ctl
}

// crdServed returns the resources of the CRDs that exist, are
// established and serve a version, as the CRD watch last saw them; nil
// without one.
func (d *Discovered) crdServed() map[schema.GroupResource]bool {
	d.mu.Lock()
	st := d.crds
	d.mu.Unlock()
	if st == nil {
		return nil
	}
	out := map[schema.GroupResource]bool{}
	for _, obj := range st.List() {
		u, ok := obj.(*unstructured.Unstructured)
		if !ok || !crdEstablished(u) {
			continue
		}
		if gr, ok := crdResource(u); ok {
			out[gr] = true
		}
	}
	return out
}

// crdSummary keeps of a CRD what the discovery reads (crdResource,
// crdEstablished): a CRD's schemas can weigh hundreds of kilobytes, and a
// cluster has hundreds of CRDs.
func crdSummary(obj interface{}) (interface{}, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return obj, nil // a tombstone
	}
	out := &unstructured.Unstructured{Object: map[string]interface{}{}}
	out.SetGroupVersionKind(u.GroupVersionKind())
	out.SetName(u.GetName())
	out.SetUID(u.GetUID())
	out.SetResourceVersion(u.GetResourceVersion())
	out.SetDeletionTimestamp(u.GetDeletionTimestamp())
	spec := map[string]interface{}{}
	if g, ok, _ := unstructured.NestedString(u.Object, "spec", "group"); ok {
		spec["group"] = g
	}
	if p, ok, _ := unstructured.NestedString(u.Object, "spec", "names", "plural"); ok {
		spec["names"] = map[string]interface{}{"plural": p}
	}
	versions, _, _ := unstructured.NestedSlice(u.Object, "spec", "versions")
	var vs []interface{}
	for _, v := range versions {
		if m, ok := v.(map[string]interface{}); ok {
			vs = append(vs, map[string]interface{}{"name": m["name"], "served": m["served"]})
		}
	}
	spec["versions"] = vs
	out.Object["spec"] = spec
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	var cs []interface{}
	for _, c := range conds {
		if m, ok := c.(map[string]interface{}); ok {
			cs = append(cs, map[string]interface{}{"type": m["type"], "status": m["status"]})
		}
	}
	out.Object["status"] = map[string]interface{}{"conditions": cs}
	return out, nil
}

// crdResource returns the resource a CRD defines.
func crdResource(obj interface{}) (schema.GroupResource, bool) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return schema.GroupResource{}, false
	}
	group, _, _ := unstructured.NestedString(u.Object, "spec", "group")
	plural, _, _ := unstructured.NestedString(u.Object, "spec", "names", "plural")
	if plural == "" {
		return schema.GroupResource{}, false
	}
	return schema.GroupResource{Group: group, Resource: plural}, true
}

// crdEstablished reports whether the CRD's resource is established and
// has a served version, so that discovery will serve it.
func crdEstablished(u *unstructured.Unstructured) bool {
	if u.GetDeletionTimestamp() != nil {
		return false
	}
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	established := false
	for _, c := range conds {
		m, _ := c.(map[string]interface{})
		if m["type"] == "Established" && m["status"] == "True" {
			established = true
		}
	}
	if !established {
		return false
	}
	versions, _, _ := unstructured.NestedSlice(u.Object, "spec", "versions")
	for _, v := range versions {
		if m, _ := v.(map[string]interface{}); m["served"] == true {
			return true
		}
	}
	return false
}

// forgetGone unmarks the deleted CRDs' resources that discovery no longer
// serves (served), and reports whether some are still served.
func (d *Discovered) forgetGone(served map[schema.GroupResource]bool) (stillServed bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for gr := range d.gone {
		if served[gr] {
			stillServed = true
		} else {
			delete(d.gone, gr)
		}
	}
	return stillServed
}

// crdsPending reports whether an established CRD's resource is not in
// discovery yet (served): the apiserver publishes it a moment later.
func (d *Discovered) crdsPending(served map[schema.GroupResource]bool) bool {
	for gr := range d.crdServed() {
		if !served[gr] {
			return true
		}
	}
	return false
}

// filterList returns list with only the objects whose namespace keep
// accepts (list itself when it keeps them all).
func filterList(list runtime.Object, keep func(string) bool) (runtime.Object, error) {
	items, err := meta.ExtractList(list)
	if err != nil {
		return nil, fmt.Errorf("filter a list by namespace: %w", err)
	}
	kept := items[:0:0]
	for _, it := range items {
		a, err := meta.Accessor(it)
		if err != nil {
			return nil, fmt.Errorf("filter a list by namespace: %w", err)
		}
		if keep(a.GetNamespace()) {
			kept = append(kept, it)
		}
	}
	if len(kept) == len(items) {
		return list, nil
	}
	if err := meta.SetList(list, kept); err != nil {
		return nil, fmt.Errorf("filter a list by namespace: %w", err)
	}
	return list, nil
}

// keepEvent reports whether a watch event passes a namespace filter:
// bookmarks, errors and objects of a namespace keep accepts do.
func keepEvent(e *watch.Event, keep func(string) bool) bool {
	if e.Type == watch.Bookmark || e.Type == watch.Error {
		return true
	}
	a, err := meta.Accessor(e.Object)
	if err != nil {
		return true
	}
	return keep(a.GetNamespace())
}
