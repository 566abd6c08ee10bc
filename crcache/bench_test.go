package crcache

import (
	"context"
	"flag"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/warmcache/warmcache/factory"
	"github.com/warmcache/warmcache/internal/fakeapi"
	"github.com/warmcache/warmcache/internal/fakesource"
	"github.com/warmcache/warmcache/internal/podgen"
	"github.com/warmcache/warmcache/store/bolt"
)

var benchPods = flag.Int("crcache.pods", 100_000, "pods BenchmarkList serves (podgen's, over 50 namespaces)")

// benchEnv is BenchmarkList's setup, shared by its sub-benchmarks: a fake
// apiserver serving podgen's pods, crcache's cache and controller-runtime's
// default cache, both synced.
type benchEnv struct {
	caches map[string]cache.Cache
	stop   func()
}

var (
	benchOnce sync.Once
	bench     *benchEnv
	benchErr  error
)

func setupBench(b *testing.B) *benchEnv {
	b.Helper()
	benchOnce.Do(func() {
		src, err := fakesource.New(fakesource.Options{})
		if err != nil {
			benchErr = err
			return
		}
		for i := range *benchPods {
			if _, err := src.Add(podgen.Pod(i)); err != nil {
				benchErr = err
				return
			}
		}
		h, err := fakeapi.NewHandler(fakeapi.Options{Source: src})
		if err != nil {
			benchErr = err
			return
		}
		srv := httptest.NewServer(h)
		cfg := &rest.Config{Host: srv.URL, QPS: -1}
		dir, err := mkdirTemp()
		if err != nil {
			benchErr = err
			return
		}
		crc, err := NewCache(Options{Factory: factory.Options{Path: filepath.Join(dir, "cache.db"), Bolt: bolt.Options{Sync: bolt.UnsafeNoSync}}})(cfg, cache.Options{})
		if err != nil {
			benchErr = err
			return
		}
		def, err := cache.New(cfg, cache.Options{})
		if err != nil {
			benchErr = err
			return
		}
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		bench = &benchEnv{caches: map[string]cache.Cache{"crcache": crc, "controller-runtime": def}}
		for _, c := range bench.caches {
			if _, err := c.GetInformer(ctx, &corev1.Pod{}); err != nil {
				benchErr = err
				cancel()
				return
			}
			wg.Go(func() { _ = c.Start(ctx) })
		}
		for name, c := range bench.caches {
			if !c.WaitForCacheSync(ctx) {
				benchErr = errNotSynced(name)
			}
		}
		bench.stop = func() { cancel(); wg.Wait(); srv.Close(); removeAll(dir) }
	})
	if benchErr != nil {
		b.Fatal(benchErr)
	}
	return bench
}

// BenchmarkList measures client.List of pods through crcache's cache
// (pushed down to the bolt store) and through controller-runtime's
// default cache (in-memory informers), at -crcache.pods pods (default
// 100k): time per List, and B/op is the transient heap a List allocates.
// Each row checks the number of pods listed.
//
//	cd crcache && go test -run '^$' -bench BenchmarkList -benchmem -count 3 -timeout 30m
func BenchmarkList(b *testing.B) {
	env := setupBench(b)
	// The caches live until TestMain stops them: every row shares them.
	app5 := func(i int) bool { return i%997 == 5 }
	ns5 := func(i int) bool { return i%podgen.Namespaces == 5 }
	for _, row := range []struct {
		name  string
		opts  []client.ListOption
		match func(i int) bool // of podgen's i-th pod; at 100k pods: 101, 2,000, 3
	}{
		{"MatchingLabels cluster-wide", []client.ListOption{client.MatchingLabels{"app.kubernetes.io/name": "app-5"}}, app5},
		{"InNamespace", []client.ListOption{client.InNamespace("ns-005")}, ns5},
		{"InNamespace and MatchingLabels", []client.ListOption{client.InNamespace("ns-005"), client.MatchingLabels{"app.kubernetes.io/name": "app-5"}}, func(i int) bool { return app5(i) && ns5(i) }},
	} {
		want := 0
		for i := range *benchPods {
			if row.match(i) {
				want++
			}
		}
		for _, name := range []string{"crcache", "controller-runtime"} {
			c := env.caches[name]
			b.Run(row.name+"/"+name, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					var l corev1.PodList
					if err := c.List(context.Background(), &l, row.opts...); err != nil {
						b.Fatal(err)
					}
					if len(l.Items) != want {
						b.Fatalf("listed %d pods, want %d", len(l.Items), want)
					}
				}
			})
		}
	}
}
