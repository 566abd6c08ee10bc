package e2e

import (
	"context"
	"testing"

	"github.com/warmcache/warmcache/internal/eventlog"
	"github.com/warmcache/warmcache/store"
	"github.com/warmcache/warmcache/store/bolt"
	"github.com/warmcache/warmcache/store/bolt/inspect"
	"github.com/warmcache/warmcache/store/codec"
)

// podsIdentity is the identity the controller records for its pods
// informer in namespace ns.
func podsIdentity(ns string) bolt.Identity {
	return bolt.Identity{Version: "v1", Resource: "pods", Kind: "Pod", Scope: store.Scope{Namespace: ns}}
}

// cached is what a cache file holds for one resource.
type cached struct {
	info  inspect.ResourceInfo
	items state
}

// readCache opens the cache file read-only (no process may have it open),
// checks it with Verify (invariant 4: every index entry agrees with the
// items) and returns the resource id's recorded state and items.
func readCache(ctx context.Context, t *testing.T, path string, id bolt.Identity) cached {
	t.Helper()
	codecs := func(name string) (codec.Codec, error) { return codec.ByName(nil, name) }
	db, err := bolt.Open(ctx, path, bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatalf("open the cache file: %v", err)
	}
	defer db.Close()
	var problems []inspect.Problem
	if err := inspect.Verify(ctx, db, codecs, func(p inspect.Problem) { problems = append(problems, p) }); err != nil {
		t.Fatalf("verify the cache file: %v", err)
	}
	for _, p := range problems {
		t.Errorf("cache file problem: %s", p)
	}
	infos, err := inspect.Resources(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	var out cached
	found := false
	for _, info := range infos {
		if info.Identity == id {
			out.info, found = info, true
		}
	}
	if !found {
		t.Fatalf("the cache file holds no resource %v; it holds %+v", id, infos)
	}
	c, err := codecs(out.info.Codec)
	if err != nil {
		t.Fatal(err)
	}
	s, err := inspect.OpenRecorded(ctx, db, id, c)
	if err != nil {
		t.Fatal(err)
	}
	out.items = state{}
	err = s.Scan(ctx, func(key string, obj interface{}) error {
		out.items[key] = eventlog.ResourceVersion(obj)
		return nil
	})
	if err != nil {
		t.Fatalf("scan the cache file: %v", err)
	}
	return out
}
