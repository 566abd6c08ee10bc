package bolt

import (
	"testing"

	"k8s.io/client-go/tools/cache"

	"github.com/warmcache/warmcache/store"
	"github.com/warmcache/warmcache/store/storetest"
)

// TestContract runs the store contract suite on a Store of a fresh file.
// The suite checks semantics, not durability, so the file is not fsynced
// (a commit costs two fsyncs, about 5 ms on a virtual disk, and the suite
// makes thousands); the persistence and crash tests use the default.
func TestContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T, indexers cache.Indexers) store.Store {
		db := openDB(t, tempPath(t), Options{Sync: UnsafeNoSync})
		return openPods(t, db, indexers)
	})
}
