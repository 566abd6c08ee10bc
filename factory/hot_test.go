package factory

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/client-go/rest"

	"github.com/warmcache/warmcache/store/bolt"
	boltmetrics "github.com/warmcache/warmcache/store/bolt/metrics"
)

// TestFactoryHotTierOptions checks that Options.Bolt reaches the file's
// hot tier and its metrics, and that WithHotBytes(0) disables one
// informer's: its point reads are neither hits nor misses.
func TestFactoryHotTierOptions(t *testing.T) {
	ctx := context.Background()
	reg := prometheus.NewRegistry()
	set, err := boltmetrics.New(reg)
	if err != nil {
		t.Fatal(err)
	}
	f, err := New(ctx, Options{
		Path:       filepath.Join(t.TempDir(), "f.db"),
		Bolt:       bolt.Options{Sync: bolt.UnsafeNoSync, Metrics: set},
		RESTConfig: &rest.Config{Host: "http://127.0.0.1:1"},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := f.Shutdown(); err != nil {
			t.Error(err)
		}
	}()
	shared, err := f.ForResource(ctx, podsGVR, "Pod", Scope{Namespace: "ns"})
	if err != nil {
		t.Fatal(err)
	}
	none, err := f.ForResource(ctx, podsGVR, "Pod", Scope{Namespace: "none"}, WithHotBytes(0))
	if err != nil {
		t.Fatal(err)
	}
	for _, idx := range []interface {
		Add(interface{}) error
		GetByKey(string) (interface{}, bool, error)
	}{shared.GetIndexer(), none.GetIndexer()} {
		if err := idx.Add(pod("a", "1")); err != nil {
			t.Fatal(err)
		}
		if _, ok, err := idx.GetByKey("ns/a"); err != nil || !ok {
			t.Fatalf("GetByKey = %t, %v", ok, err)
		}
	}
	if n, err := testutil.GatherAndCount(reg, "warmcache_store_hot_hits_total"); err != nil || n != 1 {
		t.Errorf("hot tier hit series = %d, %v; want 1 (the informer without a tier has none)", n, err)
	}
}
