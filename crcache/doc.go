// Package crcache is warmcache's controller-runtime integration: a
// manager's cache whose informers keep their objects in a bbolt file and
// resume from it after a restart, adopted with one option:
//
//	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
//		Cache:    cache.Options{ /* as with controller-runtime's cache */ },
//		NewCache: crcache.NewCache(crcache.Options{Factory: factory.Options{Path: "cache.db"}}),
//	})
//
// The cache is controller-runtime's own, built from the same
// cache.Options; NewCache gives it a NewInformer hook whose informers are
// warmcache's, each recorded in the file under the scope it lists
// (resource, kind, namespace, label and field selectors; metadata-only
// informers under their own kind), so that informers of different scopes
// never share data and a restart with other options relists instead of
// reusing another scope's objects. The informer maps of DefaultNamespaces
// and ByObject each get their own informers, as in controller-runtime.
//
// The file stores objects as the cache options' transforms shaped them
// (DefaultTransform, ByObject's Transform). A transform that changes what
// it makes of the informer's sample object (package factory keeps one per
// resource) is found when the informer is created: its stored objects are
// relisted, with a log line. Change Options.TransformVersion whenever a
// transform changes meaning, for the changes the sample does not show.
// Indexes added with IndexField are rebuilt at every start.
//
// Reads: Get is controller-runtime's (a point read of one key). List
// (what mgr.GetClient() and the cache answer) pushes InNamespace,
// MatchingLabels, MatchingLabelsSelector and MatchingFields (on fields
// indexed with IndexField) down to store.Select: only matching objects
// are decoded, where controller-runtime's reader decodes every object of
// the kind (or of the namespace) and filters. Results, options and
// errors are controller-runtime's informer cache's.
//
// Not supported, with an error wrapping ErrUnsupported: cache.Options
// NewInformer (crcache sets it), the all-namespaces key "" in
// DefaultNamespaces or ByObject.Namespaces, and Cache.RemoveInformer.
//
// Measured at 100k pods (podgen, 50 namespaces, 2 shared cores; three
// runs of go test -run '^$' -bench BenchmarkList -benchmem -count 3 in this
// directory), time and transient heap per client.List, crcache against
// controller-runtime's default cache:
//
//	MatchingLabels cluster-wide (101 match)  79-133 ms, 3.6 MB   318-480 ms, 4.4 MB
//	InNamespace (2,000)                      119-311 ms, 63 MB   137-163 ms, 24 MB
//	InNamespace + MatchingLabels (3)         1.3-2.1 ms, 0.11 MB 0.7-2.3 ms, 0.10 MB
//
// A List of many objects costs more here (decode, then the deep copy
// controller-runtime also makes); controller-runtime's cache holds every
// object on the heap between Lists.
//
// This is its own Go module, so that warmcache's module does not depend
// on controller-runtime:
//
//	go get github.com/warmcache/warmcache/crcache@latest
//
// Its releases are tagged crcache/vX.Y.Z in warmcache's repository, each
// requiring the release of warmcache's module of the same number (between
// releases, the pseudo-version of a commit of warmcache's main branch);
// RELEASING.md in the repository describes the process.
package crcache
