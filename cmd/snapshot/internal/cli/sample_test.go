package cli

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/warmcache/warmcache/internal/podgen"
	"github.com/warmcache/warmcache/store/bolt"
	"github.com/warmcache/warmcache/store/codec"
)

// The resource holding a factory's sample object (bolt.Identity.IsSample)
// is not a resource of the cluster: info and list leave it out (every
// command but verify and compact reads the same list), verify checks it.
func TestSampleResourcesAreLeftOut(t *testing.T) {
	path := fixture(t, fixtureOptions{podsOnly: true})
	db, err := bolt.Open(context.Background(), path, bolt.Options{Logger: klog.Background(), Sync: bolt.UnsafeNoSync})
	if err != nil {
		t.Fatal(err)
	}
	p := podgen.Pod(0)
	p.TypeMeta = metav1.TypeMeta{}
	fill(t, db, podsID.Sample(), codec.Protobuf(nil), nil, []interface{}{p}, "7", 500)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	info := run(t, "info", path)
	if info.code != 0 || strings.Contains(info.stdout, "sample") || !strings.Contains(info.stdout, "Resources:  1") {
		t.Errorf("info (exit %d) lists the sample or not the pods:\n%s%s", info.code, info.stdout, info.stderr)
	}
	if l := run(t, "list", path, podsID.Resource+bolt.SampleResourceSuffix, "-A"); l.code == 0 {
		t.Errorf("list of the sample resource exits 0:\n%s", l.stdout)
	}
	if v := run(t, "verify", path); v.code != 0 || !strings.Contains(v.stdout, "(1 resource, 1 factory sample, ") {
		t.Errorf("verify (exit %d) does not check both resources:\n%s%s", v.code, v.stdout, v.stderr)
	}
}
