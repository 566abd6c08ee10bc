package listers

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"
)

// NewGeneric returns client-go's cache.GenericLister over indexer, as
// cache.NewGenericLister does, whose List methods hand the namespace and
// the label selector to the store (see ResourceIndexer): on a warmcache
// store they decode only the objects they select. resource names the
// objects in NotFound errors.
func NewGeneric(indexer cache.Indexer, resource schema.GroupResource) cache.GenericLister {
	return genericLister{New[runtime.Object](indexer, resource)}
}

type genericLister struct {
	ResourceIndexer[runtime.Object]
}

// ByNamespace returns the lister of the objects in namespace.
func (l genericLister) ByNamespace(namespace string) cache.GenericNamespaceLister {
	return genericNamespaceLister{NewNamespaced(l.ResourceIndexer, namespace)}
}

type genericNamespaceLister struct {
	ResourceIndexer[runtime.Object]
}

var (
	_ cache.GenericLister          = genericLister{}
	_ cache.GenericNamespaceLister = genericNamespaceLister{}
)
