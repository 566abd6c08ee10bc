package soakctl

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Resource is one resource the controller caches: one informer, one
// handler, one resource in the cache file.
type Resource struct {
	// Name is the resource's plural name, as its events name it.
	Name string
	// GVR is the resource the informer lists and watches.
	GVR schema.GroupVersionResource
	// Kind is the typed kind, "" for a custom resource cached as
	// unstructured objects (factory.ForDynamic).
	Kind string
}

// Dynamic reports whether the resource is cached as unstructured objects.
func (r Resource) Dynamic() bool { return r.Kind == "" }

// WidgetGVR is the soak's custom resource: namespaced Widgets of group
// soak.warmcache.dev, created by WidgetCRD.
var WidgetGVR = schema.GroupVersionResource{Group: "soak.warmcache.dev", Version: "v1", Resource: "widgets"}

// Resources are the controller's informers, in the order it creates them.
var Resources = []Resource{
	{Name: "pods", GVR: schema.GroupVersionResource{Version: "v1", Resource: "pods"}, Kind: "Pod"},
	{Name: "configmaps", GVR: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, Kind: "ConfigMap"},
	{Name: WidgetGVR.Resource, GVR: WidgetGVR},
}

// WidgetCRD returns the CustomResourceDefinition of WidgetGVR, as an
// unstructured object for the dynamic client (the module does not depend
// on apiextensions' types).
func WidgetCRD() *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "apiextensions.k8s.io/v1",
		"kind":       "CustomResourceDefinition",
		"metadata":   map[string]interface{}{"name": WidgetGVR.Resource + "." + WidgetGVR.Group},
		"spec": map[string]interface{}{
			"group": WidgetGVR.Group,
			"scope": "Namespaced",
			"names": map[string]interface{}{"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
			"versions": []interface{}{map[string]interface{}{
				"name": WidgetGVR.Version, "served": true, "storage": true,
				"schema": map[string]interface{}{"openAPIV3Schema": map[string]interface{}{
					"type": "object",
					"properties": map[string]interface{}{"spec": map[string]interface{}{
						"type": "object", "x-kubernetes-preserve-unknown-fields": true,
					}},
				}},
			}},
		},
	}}
}
