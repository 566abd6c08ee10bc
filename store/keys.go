package store

import (
	"fmt"

	"k8s.io/client-go/tools/cache"
)

// DefaultKeyFunc is the key function of every warmcache store, queue and
// informer unless one is configured: client-go's
// cache.DeletionHandlingMetaNamespaceKeyFunc ("namespace/name", or "name"
// for cluster-scoped objects; a cache.DeletedFinalStateUnknown's own Key).
func DefaultKeyFunc(obj interface{}) (string, error) {
	return cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
}

// KeyOf calls fn (DefaultKeyFunc when nil) for obj. Its error, or a panic
// in it (client-go's key functions dereference a typed nil pointer such as
// (*corev1.Pod)(nil)), is returned as a cache.KeyError, so that bad input
// never crashes the process or leaves a lock held.
func KeyOf(fn cache.KeyFunc, obj interface{}) (key string, err error) {
	if fn == nil {
		fn = DefaultKeyFunc
	}
	defer func() {
		if r := recover(); r != nil {
			key, err = "", cache.KeyError{Obj: obj, Err: fmt.Errorf("key function panicked: %v", r)}
		}
	}()
	if key, err = fn(obj); err != nil {
		return "", cache.KeyError{Obj: obj, Err: err}
	}
	return key, nil
}

// IndexValuesOf calls the index function fn, named name, for the object
// stored under key. Its error, or a panic in it (typically a type
// assertion meeting an unexpected object), is returned wrapping
// ErrIndexFunc with the index name and the key. The returned slice belongs
// to fn: callers that keep or reorder it copy it first.
func IndexValuesOf(name string, fn cache.IndexFunc, key string, obj interface{}) (values []string, err error) {
	defer func() {
		if r := recover(); r != nil {
			values, err = nil, fmt.Errorf("%w: index %q, key %q: panic: %v", ErrIndexFunc, name, key, r)
		}
	}()
	values, err = fn(obj)
	if err != nil {
		return nil, fmt.Errorf("%w: index %q, key %q: %w", ErrIndexFunc, name, key, err)
	}
	return values, nil
}
