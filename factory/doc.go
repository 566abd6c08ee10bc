// Package factory wires warmcache informers to a cache file: one bbolt
// file (store/bolt) holds the stores of many informers, one per resource
// and scope, as client-go's SharedInformerFactory shares one cache per
// resource. It builds the list/watch of each informer (typed REST clients
// for built-in kinds, the dynamic client for custom resources, the
// metadata client for metadata-only informers: ForMetadata), records
// each informer's identity (resource, kind, scope, codec, indexes) in the
// file so that a restart finds its own data, and plugs informers into
// controller-runtime through NewInformerFunc and HookInformer (the
// crcache module builds a whole controller-runtime cache on them). A
// metadata-only informer (MetadataKind) and an unstructured one of a typed
// kind (UnstructuredKind) each have their own identity, apart from the
// typed informer of the same resource and scope.
//
// Without Options.Path the stores live in memory (store/memory), like
// client-go's.
//
// A corrupt, foreign or unflushed file is moved aside and rebuilt from the
// apiserver (invariant 5 of DESIGN.md); package informer never sees the
// file, only the store.Store contract.
package factory
