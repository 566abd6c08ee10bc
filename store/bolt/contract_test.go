package bolt

import (
	"context"
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

// TestClientGo runs client-go's own tools/cache store, indexer and lister
// tests (storetest.RunClientGo) on a Store of a fresh file. The store
// holds runtime.Objects only, so client-go's plain structs are pods.
func TestClientGo(t *testing.T) {
	storetest.RunClientGo(t, storetest.ClientGoConfig{
		New: func(t *testing.T, keyFunc cache.KeyFunc, indexers cache.Indexers) store.Store {
			db := openDB(t, tempPath(t), Options{Sync: UnsafeNoSync})
			s, err := db.Resource(context.Background(), ResourceOptions{Identity: podsID, Codec: podCodec, Indexers: indexers, KeyFunc: keyFunc})
			if err != nil {
				t.Fatalf("Resource: %v", err)
			}
			return s
		},
	})
}
