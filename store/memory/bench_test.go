package memory_test

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/warmcache/warmcache/internal/podgen"
	"github.com/warmcache/warmcache/store/memory"
)

// benchPods is the number of pods the benchmarks work with.
const benchPods = 10_000

// Each benchmark runs against the memory store and, for comparison, against
// client-go's cache.NewIndexer with the same namespace index:
//
//	go test -run '^$' -bench . -benchmem ./store/memory/
var benchStores = []struct {
	name string
	new  func(b *testing.B) cache.Indexer
}{
	{"memory", func(b *testing.B) cache.Indexer {
		s, err := memory.New(memory.Options{Indexers: cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}})
		if err != nil {
			b.Fatal(err)
		}
		return s
	}},
	{"client-go", func(*testing.B) cache.Indexer {
		return cache.NewIndexer(cache.DeletionHandlingMetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	}},
}

func filled(b *testing.B, newStore func(*testing.B) cache.Indexer, pods []*corev1.Pod) cache.Indexer {
	s := newStore(b)
	for _, p := range pods {
		if err := s.Add(p); err != nil {
			b.Fatal(err)
		}
	}
	return s
}

// BenchmarkAdd inserts pods into a store that grows to benchPods and is
// then replaced by an empty one (outside the timer).
func BenchmarkAdd(b *testing.B) {
	pods := podgen.Pods(benchPods)
	for _, bs := range benchStores {
		b.Run(bs.name, func(b *testing.B) {
			b.ReportAllocs()
			s := bs.new(b)
			i := 0
			for b.Loop() {
				if i == len(pods) {
					b.StopTimer()
					s, i = bs.new(b), 0
					b.StartTimer()
				}
				if err := s.Add(pods[i]); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}

// BenchmarkUpdate replaces pods of a full store with new versions.
func BenchmarkUpdate(b *testing.B) {
	pods := podgen.Pods(benchPods)
	updated := make([]*corev1.Pod, len(pods))
	for i, p := range pods {
		updated[i] = p.DeepCopy()
		updated[i].ResourceVersion = fmt.Sprint(benchPods + i + 1)
	}
	for _, bs := range benchStores {
		b.Run(bs.name, func(b *testing.B) {
			s := filled(b, bs.new, pods)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if err := s.Update(updated[i%len(updated)]); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}

// BenchmarkGetByKey looks up pods of a full store by key.
func BenchmarkGetByKey(b *testing.B) {
	pods := podgen.Pods(benchPods)
	keys := make([]string, len(pods))
	for i, p := range pods {
		keys[i] = p.Namespace + "/" + p.Name
	}
	for _, bs := range benchStores {
		b.Run(bs.name, func(b *testing.B) {
			s := filled(b, bs.new, pods)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if _, ok, err := s.GetByKey(keys[i%len(keys)]); !ok || err != nil {
					b.Fatalf("GetByKey(%s) = %v, %v", keys[i%len(keys)], ok, err)
				}
				i++
			}
		})
	}
}

// BenchmarkByIndexNamespace lists one namespace (benchPods/podgen.Namespaces
// pods) through the namespace index.
func BenchmarkByIndexNamespace(b *testing.B) {
	pods := podgen.Pods(benchPods)
	for _, bs := range benchStores {
		b.Run(bs.name, func(b *testing.B) {
			s := filled(b, bs.new, pods)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				ns := pods[i%podgen.Namespaces].Namespace
				objs, err := s.ByIndex(cache.NamespaceIndex, ns)
				if err != nil || len(objs) != benchPods/podgen.Namespaces {
					b.Fatalf("ByIndex(%s) = %d objects, %v", ns, len(objs), err)
				}
				i++
			}
		})
	}
}

// BenchmarkReplace relists benchPods pods into a full store.
func BenchmarkReplace(b *testing.B) {
	pods := podgen.Pods(benchPods)
	list := make([]interface{}, len(pods))
	for i, p := range pods {
		list[i] = p
	}
	for _, bs := range benchStores {
		b.Run(bs.name, func(b *testing.B) {
			s := filled(b, bs.new, pods)
			b.ReportAllocs()
			for b.Loop() {
				if err := s.Replace(list, "1"); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
