package informers

import "k8s.io/client-go/tools/cache"

// informerWithLister is one of client-go's typed informers (PodInformer,
// ...) whose Lister is warmcache's lister of the same interface: Informer
// is client-go's typed informer's, which comes through the Factory's
// InformerFor, and Lister is newLister over that informer's store, whose
// List methods hand the namespace and the label selector to the store,
// which decodes only the objects they select. L is client-go's lister
// interface (corev1listers.PodLister), so informerWithLister[L] implements
// the typed informer interface whose Lister returns L.
type informerWithLister[L any] struct {
	typed     hasInformer
	newLister func(cache.Indexer) L
}

// hasInformer is a typed informer of client-go as informerWithLister uses it.
type hasInformer interface {
	Informer() cache.SharedIndexInformer
}

// withLister returns typed, one of client-go's typed informers, with the
// lister newLister makes (NewPodLister of package listers/core/v1).
func withLister[L any](typed hasInformer, newLister func(cache.Indexer) L) informerWithLister[L] {
	return informerWithLister[L]{typed: typed, newLister: newLister}
}

// Informer returns client-go's typed informer's Informer.
func (w informerWithLister[L]) Informer() cache.SharedIndexInformer { return w.typed.Informer() }

// Lister returns warmcache's lister over the informer's store.
func (w informerWithLister[L]) Lister() L { return w.newLister(w.Informer().GetIndexer()) }
