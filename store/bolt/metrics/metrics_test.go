package metrics_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/goleak"

	"github.com/warmcache/warmcache/internal/testkit"
	"github.com/warmcache/warmcache/store/bolt"
	"github.com/warmcache/warmcache/store/bolt/metrics"
	"github.com/warmcache/warmcache/store/codec"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var podsID = bolt.Identity{Version: "v1", Resource: "pods", Kind: "Pod"}

// TestStoreMetrics checks the metric names and labels a DB's measurements
// are recorded under, and that a second Set on the same registry adds to
// the first's collectors.
func TestStoreMetrics(t *testing.T) {
	ctx := context.Background()
	reg := prometheus.NewPedanticRegistry()
	set, err := metrics.New(reg)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "cache.db")
	db, err := bolt.Open(ctx, path, bolt.Options{Sync: bolt.UnsafeNoSync, Metrics: set, CheckAtOpen: true})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = db.Close() }()
	s, err := db.Resource(ctx, bolt.ResourceOptions{Identity: podsID, Codec: codec.Protobuf(nil)})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Add(testkit.Pod("a", "1")); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"ns/a", "ns/missing"} {
		if _, _, err := s.GetByKey(key); err != nil {
			t.Fatal(err)
		}
	}
	set2, err := metrics.New(reg)
	if err != nil {
		t.Fatalf("a second Set on the same registry: %v", err)
	}
	set2.Hot(podsID.String()).Hit()
	set2.CorruptRecord(podsID.String(), "envelope")

	want := fmt.Sprintf(`
# HELP warmcache_store_hot_hits_total Point reads served by the hot tier of decoded objects.
# TYPE warmcache_store_hot_hits_total counter
warmcache_store_hot_hits_total{resource=%[1]q} 2
# HELP warmcache_store_hot_entries Objects in the hot tier.
# TYPE warmcache_store_hot_entries gauge
warmcache_store_hot_entries{resource=%[1]q} 1
# HELP warmcache_store_corrupt_objects_total Stored records found corrupt (checksum mismatch, or an object that does not decode), by part: envelope, item, index (skipped by reads), meta, live (the resource discarded on open).
# TYPE warmcache_store_corrupt_objects_total counter
warmcache_store_corrupt_objects_total{part="envelope",resource=%[1]q} 1
# HELP warmcache_store_file_check_done 1 once every page of the cache file was checked (at open or in the background), else 0.
# TYPE warmcache_store_file_check_done gauge
warmcache_store_file_check_done{file=%[2]q} 1
# HELP warmcache_store_file_corrupt 1 once corruption was found in the open cache file (the background check or a read), else 0.
# TYPE warmcache_store_file_corrupt gauge
warmcache_store_file_corrupt{file=%[2]q} 0
`, podsID.String(), path)
	names := []string{"warmcache_store_hot_hits_total", "warmcache_store_hot_entries", "warmcache_store_corrupt_objects_total",
		"warmcache_store_file_check_done", "warmcache_store_file_corrupt"}
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), names...); err != nil {
		t.Error(err)
	}
	for name, want := range map[string]int{"warmcache_store_hot_misses_total": 1, "warmcache_store_hot_evictions_total": 1,
		"warmcache_store_hot_bytes": 1, "warmcache_store_file_check_duration_seconds": 1} {
		if n, err := testutil.GatherAndCount(reg, name); err != nil || n != want {
			t.Errorf("%s: %d series, %v; want %d", name, n, err, want)
		}
	}
}

func TestNewRejectsNil(t *testing.T) {
	if _, err := metrics.New(nil); !errors.Is(err, bolt.ErrInvalidOptions) {
		t.Fatalf("New(nil) = %v, want ErrInvalidOptions", err)
	}
}
