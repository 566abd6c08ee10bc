package seal_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/warmcache/warmcache/store/bolt"
	"github.com/warmcache/warmcache/store/codec"
	"github.com/warmcache/warmcache/store/seal"
)

// BenchmarkOpen measures what opening a resource of 10,000 Secrets costs
// with the check of every sealed payload's key (sealed) beside a
// plaintext resource (plain), file and DB open included.
//
//	go test ./store/seal -run '^$' -bench Open -benchtime 20x
func BenchmarkOpen(b *testing.B) {
	const n = 10000
	ctx := context.Background()
	key, err := seal.NewKey(make([]byte, seal.KeySize))
	if err != nil {
		b.Fatal(err)
	}
	sealed, err := seal.NewCodec(codec.Protobuf(nil), []seal.Key{key})
	if err != nil {
		b.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		c    codec.Codec
	}{{"plain", codec.Protobuf(nil)}, {"sealed", sealed}} {
		path := filepath.Join(b.TempDir(), "cache.db")
		db, err := bolt.Open(ctx, path, bolt.Options{Sync: bolt.UnsafeNoSync})
		if err != nil {
			b.Fatal(err)
		}
		s, err := db.Resource(ctx, bolt.ResourceOptions{Identity: secretID, Codec: tc.c})
		if err != nil {
			b.Fatal(err)
		}
		r, err := s.BeginReplace(ctx)
		if err != nil {
			b.Fatal(err)
		}
		for i := 0; i < n; i += 500 {
			objs := make([]interface{}, 0, 500)
			for j := i; j < i+500; j++ {
				objs = append(objs, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprintf("s-%05d", j), ResourceVersion: "1"},
					Data: map[string][]byte{"tls.key": make([]byte, 1700)}})
			}
			if err := r.Add(ctx, objs...); err != nil {
				b.Fatal(err)
			}
		}
		if err := r.Commit(ctx, "1"); err != nil {
			b.Fatal(err)
		}
		if err := r.Release(); err != nil {
			b.Fatal(err)
		}
		if err := db.Close(); err != nil {
			b.Fatal(err)
		}
		b.Run(tc.name, func(b *testing.B) {
			for b.Loop() {
				db, err := bolt.Open(ctx, path, bolt.Options{Sync: bolt.UnsafeNoSync})
				if err != nil {
					b.Fatal(err)
				}
				s, err := db.Resource(ctx, bolt.ResourceOptions{Identity: secretID, Codec: tc.c})
				if err != nil {
					b.Fatal(err)
				}
				if st, _ := s.State(); st.Objects != n || st.Discarded != "" {
					b.Fatalf("state %+v", st)
				}
				if err := db.Close(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
