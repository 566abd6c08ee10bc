package informers

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime/schema"
	clientinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	"github.com/warmcache/warmcache/listers"
)

// ForResource returns the informer of resource, as the typed informer of
// its kind does (the same informer: one per Go type), with a generic
// lister that selects in the store. A resource that is not one of
// client-go's scheme with a typed client returns an error wrapping
// ErrUnknownType.
func (f *Factory) ForResource(resource schema.GroupVersionResource) (clientinformers.GenericInformer, error) {
	obj, r, err := resolveResource(resource)
	if err != nil {
		return nil, err
	}
	inf := f.InformerFor(obj, nil)
	if inf == nil {
		return nil, fmt.Errorf("%w: no informer for %v", ErrUnknownType, resource)
	}
	return NewGenericInformer(inf, r.gvr.GroupResource()), nil
}

// NewGenericInformer returns inf as a client-go GenericInformer of
// resource whose Lister hands the namespace and the label selector of its
// List methods to inf's store, which decodes only the objects they select
// (listers.NewGeneric): what ForResource returns, for an informer of
// factory.Factory's own (ForDynamic, ForResource).
func NewGenericInformer(inf cache.SharedIndexInformer, resource schema.GroupResource) clientinformers.GenericInformer {
	return &genericInformer{informer: inf, resource: resource}
}

type genericInformer struct {
	informer cache.SharedIndexInformer
	resource schema.GroupResource
}

func (g *genericInformer) Informer() cache.SharedIndexInformer { return g.informer }

func (g *genericInformer) Lister() cache.GenericLister {
	return listers.NewGeneric(g.informer.GetIndexer(), g.resource)
}
