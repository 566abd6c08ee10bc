package fakesource

import (
	"fmt"
	"strconv"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// This file holds how the source identifies objects (their kind,
// namespace and name) and makes the objects a kind's responses need.

// objKey identifies a stored object.
type objKey struct {
	gvk       schema.GroupVersionKind
	namespace string
	name      string
}

func (k objKey) String() string {
	if k.namespace == "" {
		return k.name
	}
	return k.namespace + "/" + k.name
}

func (k objKey) less(o objKey) bool {
	if k.namespace != o.namespace {
		return k.namespace < o.namespace
	}
	return k.name < o.name
}

// keyOf returns obj's kind, namespace and name.
func (s *Source) keyOf(obj runtime.Object) (objKey, error) {
	if obj == nil {
		return objKey{}, fmt.Errorf("%w: nil object", ErrInvalidObject)
	}
	acc, err := meta.Accessor(obj)
	if err != nil {
		return objKey{}, fmt.Errorf("%w: %v", ErrInvalidObject, err)
	}
	if acc.GetName() == "" {
		return objKey{}, fmt.Errorf("%w: object has no name", ErrInvalidObject)
	}
	gvk, err := s.kindOf(obj)
	if err != nil {
		return objKey{}, err
	}
	return objKey{gvk: gvk, namespace: acc.GetNamespace(), name: acc.GetName()}, nil
}

func (s *Source) kindOf(obj runtime.Object) (schema.GroupVersionKind, error) {
	if _, ok := obj.(runtime.Unstructured); ok {
		gvk := obj.GetObjectKind().GroupVersionKind()
		if gvk.Empty() || gvk.Kind == "" {
			return gvk, fmt.Errorf("%w: unstructured object without apiVersion and kind", ErrInvalidObject)
		}
		if s.scheme.Recognizes(gvk) {
			return gvk, fmt.Errorf("%w: %v is a typed kind; pass the typed object", ErrInvalidObject, gvk)
		}
		return gvk, nil
	}
	gvks, _, err := s.scheme.ObjectKinds(obj)
	if err != nil || len(gvks) == 0 {
		return schema.GroupVersionKind{}, fmt.Errorf("%w: kind of %T: %v", ErrInvalidObject, obj, err)
	}
	return gvks[0], nil
}

// newObject returns an empty object of a kind, typed when the scheme
// knows it.
func (s *Source) newObject(gvk schema.GroupVersionKind) runtime.Object {
	if obj, err := s.scheme.New(gvk); err == nil {
		return obj
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	return u
}

// newList returns an empty list object for a kind.
func (s *Source) newList(gvk schema.GroupVersionKind) runtime.Object {
	lgvk := gvk.GroupVersion().WithKind(gvk.Kind + "List")
	if obj, err := s.scheme.New(lgvk); err == nil && meta.IsListType(obj) {
		return obj
	}
	if s.scheme.Recognizes(gvk) {
		return &metav1.List{}
	}
	u := &unstructured.UnstructuredList{}
	u.SetGroupVersionKind(lgvk)
	return u
}

// bookmark returns a bookmark object of a kind at rv.
func (s *Source) bookmark(gvk schema.GroupVersionKind, rv int64, initialEventsEnd bool) runtime.Object {
	obj := s.newObject(gvk)
	acc, err := meta.Accessor(obj)
	if err != nil {
		// newObject returns objects with metadata; nothing to annotate.
		return obj
	}
	acc.SetResourceVersion(strconv.FormatInt(rv, 10))
	if initialEventsEnd {
		acc.SetAnnotations(map[string]string{metav1.InitialEventsAnnotationKey: "true"})
	}
	return obj
}
