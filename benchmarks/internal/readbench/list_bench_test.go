package readbench

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	clientcorelisters "k8s.io/client-go/listers/core/v1"

	"github.com/warmcache/warmcache/benchmarks/internal/storebench"
	corelisters "github.com/warmcache/warmcache/listers/core/v1"
)

// BenchmarkLists measures the lists of issue 35's goal on 20,000 pods:
// List(everything) and Pods(ns).List(everything) through client-go's
// lister on client-go's indexer, and through warmcache's on a bolt store
// with the default hot tier and with one that holds every pod (the
// bolt-hot column of cmd/readbench). For profiles:
//
//	go test -run '^$' -bench Lists -cpuprofile cpu.out ./benchmarks/internal/readbench
func BenchmarkLists(b *testing.B) {
	const n = 20000
	c, err := storebench.NewCorpus(n)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	whole := int64(n) * 16 << 10
	for _, impl := range []struct {
		name string
		opts storebench.Options
	}{
		{storebench.ClientGo, storebench.Options{}},
		{storebench.Bolt, storebench.Options{}},
		{BoltHot, storebench.Options{BoltHotBytes: &whole}},
	} {
		kind := storebench.Bolt
		if impl.name == storebench.ClientGo {
			kind = storebench.ClientGo
		}
		impl.opts.Dir = b.TempDir()
		st, err := storebench.Open(ctx, kind, impl.opts)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = st.Close() })
		if err := storebench.Load(ctx, st, c, n, nopTimer{}); err != nil {
			b.Fatal(err)
		}
		var l PodLister = corelisters.NewPodLister(st.Indexer)
		if kind == storebench.ClientGo {
			l = clientcorelisters.NewPodLister(st.Indexer)
		}
		for _, r := range []struct {
			name string
			fn   func() ([]*corev1.Pod, error)
		}{
			{"List", func() ([]*corev1.Pod, error) { return l.List(labels.Everything()) }},
			{"PodsList", func() ([]*corev1.Pod, error) { return l.Pods("ns-007").List(labels.Everything()) }},
		} {
			b.Run(impl.name+"/"+r.name, func(b *testing.B) {
				for b.Loop() {
					if _, err := r.fn(); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
