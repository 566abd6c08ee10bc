package informers

import (
	"fmt"
	"reflect"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
)

// typedResource is what the factory knows of one typed resource.
type typedResource struct {
	gvr    schema.GroupVersionResource
	gvk    schema.GroupVersionKind
	client typedClient
}

// resolve maps obj's Go type to its kind in client-go's scheme, its
// resource (the kind's conventional plural, as client-go's generated
// ForResource names it) and its typed client.
func resolve(obj runtime.Object) (typedResource, error) {
	gvks, _, err := scheme.Scheme.ObjectKinds(obj)
	if err != nil || len(gvks) == 0 {
		return typedResource{}, fmt.Errorf("%w: %T: %w", ErrUnknownType, obj, err)
	}
	gvk := gvks[0]
	list, err := scheme.Scheme.New(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	if err != nil {
		return typedResource{}, fmt.Errorf("%w: %T (%s) has no list kind: %w", ErrUnknownType, obj, gvk, err)
	}
	tc, ok := typedClientOf(reflect.TypeOf(list))
	if !ok {
		return typedResource{}, fmt.Errorf("%w: kubernetes.Interface has no typed client listing %T", ErrNoTypedClient, list)
	}
	gvr, _ := meta.UnsafeGuessKindToResource(gvk)
	return typedResource{gvr: gvr, gvk: gvk, client: tc}, nil
}

// resolveResource maps a resource to the Go object of its kind: the kind
// of gvr's group version in client-go's scheme whose plural is
// gvr.Resource and that has a typed client.
func resolveResource(gvr schema.GroupVersionResource) (runtime.Object, typedResource, error) {
	for kind := range scheme.Scheme.KnownTypes(gvr.GroupVersion()) {
		gvk := gvr.GroupVersion().WithKind(kind)
		if plural, _ := meta.UnsafeGuessKindToResource(gvk); plural != gvr {
			continue
		}
		obj, err := scheme.Scheme.New(gvk)
		if err != nil {
			continue
		}
		if r, err := resolve(obj); err == nil {
			return obj, r, nil
		}
	}
	return nil, typedResource{}, fmt.Errorf("%w: no informer found for %v", ErrUnknownType, gvr)
}

// SelectorsOfTweak applies tweak to empty list options and returns the
// label and field selectors it sets: what a factory records as the scope
// of the informers the tweak applies to. It returns an error wrapping
// ErrUnsupportedTweak if the tweak sets anything but the selectors, Limit
// and TimeoutSeconds, which would change what a resumed watch means (see
// the package doc). A nil tweak sets nothing.
func SelectorsOfTweak(tweak func(*metav1.ListOptions)) (labelSelector, fieldSelector string, err error) {
	if tweak == nil {
		return "", "", nil
	}
	var o metav1.ListOptions
	tweak(&o)
	labelSelector, fieldSelector = o.LabelSelector, o.FieldSelector
	o.LabelSelector, o.FieldSelector, o.Limit, o.TimeoutSeconds = "", "", 0, nil
	if !reflect.DeepEqual(o, metav1.ListOptions{}) {
		return "", "", fmt.Errorf("%w: the tweak sets %+v besides the selectors", ErrUnsupportedTweak, o)
	}
	return labelSelector, fieldSelector, nil
}
