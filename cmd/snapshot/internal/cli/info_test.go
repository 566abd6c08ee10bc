package cli

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/warmcache/warmcache/cmd/snapshot/internal/golden"
	"github.com/warmcache/warmcache/internal/podgen"
	"github.com/warmcache/warmcache/store/bolt"
	"github.com/warmcache/warmcache/store/codec"
)

// TestGoldenInfoRecordedTrust: info shows the cluster and the transform
// version a resource recorded (schema 5), in text and json, beside the
// resource's other identity, and says so when a resource recorded none.
func TestGoldenInfoRecordedTrust(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cache.db")
	ctx := context.Background()
	db, err := bolt.Open(ctx, path, bolt.Options{Logger: klog.Background(), Sync: bolt.UnsafeNoSync})
	if err != nil {
		t.Fatal(err)
	}
	var pods []interface{}
	for i := range 2 {
		p := podgen.Pod(i)
		p.TypeMeta = metav1.TypeMeta{}
		pods = append(pods, p)
	}
	fillResource(t, db, bolt.ResourceOptions{
		Identity:         podsID,
		Codec:            codec.Protobuf(nil),
		Indexers:         cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc},
		Cluster:          "0c6a3c5e-5b4d-4f7e-9d7a-2f1e8b9c0d11",
		TransformVersion: "strip-managed-fields/v2",
	}, pods, "2", 500)
	fillResource(t, db, bolt.ResourceOptions{Identity: nodesID, Codec: codec.Protobuf(nil)}, nil, "7", 500)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		args []string
	}{
		{"info-recorded-trust", []string{"info", path}},
		{"info-recorded-trust-json", []string{"info", path, "-o", "json"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			unchanged(t, path)
			r := run(t, tt.args...)
			golden.Check(t, tt.name, transcript(filepath.Dir(path), tt.args, r))
		})
	}
}

// TestInfoPageSize checks that info reports the page size of the file,
// not the default of a file Open would create: in every output format,
// for a file of 4 KiB pages.
func TestInfoPageSize(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cache.db")
	db, err := bolt.Open(context.Background(), path, bolt.Options{Logger: klog.Background(), Sync: bolt.UnsafeNoSync, PageSize: 4096})
	if err != nil {
		t.Fatal(err)
	}
	fillResource(t, db, bolt.ResourceOptions{Identity: nodesID, Codec: codec.Protobuf(nil)}, nil, "7", 500)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		format, want string
	}{
		{"text", "\nPage size:  4.0 KiB\n"},
		{"json", "\n    \"pageSize\": 4096,\n"},
		{"yaml", "\npageSize: 4096\n"},
	} {
		t.Run(tt.format, func(t *testing.T) {
			r := run(t, "info", path, "-o", tt.format)
			if r.code != ExitOK || !strings.Contains(r.stdout, tt.want) {
				t.Errorf("info -o %s: exit %d, want %d and a line %q; stdout:\n%s\nstderr:\n%s", tt.format, r.code, ExitOK, strings.TrimSpace(tt.want), r.stdout, r.stderr)
			}
		})
	}
}
