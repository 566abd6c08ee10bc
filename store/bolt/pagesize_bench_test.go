package bolt

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	krt "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/warmcache/warmcache/internal/podgen"
)

// BenchmarkPageSize measures what Options.PageSize changes, per page size,
// for podgen pods (an envelope of about 6.4 KB: a leaf of its own, two
// pages at 4 KiB) and for small configmaps (an envelope of about 500
// bytes), benchPods objects each, the hot tier off (every read decodes):
//
//   - get: GetByKey of every key; the file's size after the initial list
//     is reported as file-KB.
//   - byindex: ByIndex(namespace), benchPods/podgen.Namespaces objects.
//   - apply/batch=N: updates (a new RV) of scattered keys, N per
//     transaction under SyncOnClose, per object: besides CPU and
//     allocations, the bytes the process passed to write calls (bbolt's
//     dirty pages and meta page) as write-B/op, from /proc/self/io.
//   - open: Open and Resource of the file (a warm open), then Close.
//
// The page sizes alternate within each run; run it with -count 3 or more
// and compare the spread:
//
//	go test -run '^$' -bench PageSize -count 3 ./store/bolt/
func BenchmarkPageSize(b *testing.B) {
	kinds := []struct {
		name string
		id   Identity
		objs func() []metav1.Object
	}{
		{"pod", podsID, func() []metav1.Object {
			out := make([]metav1.Object, 0, benchPods)
			for _, p := range benchPodList() {
				out = append(out, p)
			}
			return out
		}},
		{"configmap", Identity{Version: "v1", Resource: "configmaps", Kind: "ConfigMap"}, func() []metav1.Object {
			out := make([]metav1.Object, benchPods)
			for i := range out {
				out[i] = benchConfigMap(i)
			}
			return out
		}},
	}
	ctx := context.Background()
	for _, kind := range kinds {
		objs := kind.objs()
		list := make([]interface{}, len(objs))
		for i, o := range objs {
			list[i] = o
		}
		for _, ps := range []int{4096, 8192, 16384} {
			prefix := fmt.Sprintf("%s/page=%d/", kind.name, ps)
			path := tempPath(b)
			opts := Options{Sync: SyncOnClose, PageSize: ps, HotBytes: ptrTo(int64(0)), FlushInterval: -1}
			ropts := ResourceOptions{Identity: kind.id, Codec: podCodec, Indexers: namespaceIndexers()}
			db, err := Open(ctx, path, opts)
			must(b, err)
			s, err := db.Resource(ctx, ropts)
			must(b, err)
			must(b, s.Replace(list, strconv.Itoa(len(list))))
			fi, err := os.Stat(path)
			must(b, err)
			b.Run(prefix+"get", func(b *testing.B) {
				runtime.GC()
				b.ReportAllocs()
				b.ResetTimer()
				defer reportCPU(b, cpuTime())
				for i := 0; i < b.N; i++ {
					o := objs[(i*7919)%len(objs)]
					if _, ok, err := s.GetByKey(o.GetNamespace() + "/" + o.GetName()); !ok || err != nil {
						b.Fatal(ok, err)
					}
				}
				b.ReportMetric(float64(fi.Size())/1024, "file-KB")
			})
			b.Run(prefix+"byindex", func(b *testing.B) {
				runtime.GC()
				b.ReportAllocs()
				b.ResetTimer()
				defer reportCPU(b, cpuTime())
				for i := 0; i < b.N; i++ {
					objs, err := s.ByIndex(cache.NamespaceIndex, fmt.Sprintf("ns-%03d", i%podgen.Namespaces))
					if err != nil || len(objs) != benchPods/podgen.Namespaces {
						b.Fatal(len(objs), err)
					}
				}
			})
			for _, batch := range []int{1, 10, 100} {
				b.Run(fmt.Sprintf("%sapply/batch=%d", prefix, batch), func(b *testing.B) {
					// Updated copies with new RVs, prepared outside the timer.
					updates := make([]cache.Transaction, b.N)
					for n := range updates {
						o := objs[(n*7919)%len(objs)].(interface{ DeepCopyObject() krt.Object })
						c := o.DeepCopyObject().(metav1.Object)
						c.SetResourceVersion(strconv.Itoa(len(objs) + n + 1))
						updates[n] = cache.Transaction{Type: cache.TransactionTypeUpdate, Object: c}
					}
					runtime.GC()
					b.ReportAllocs()
					w0 := writtenBytes(b)
					b.ResetTimer()
					defer reportCPU(b, cpuTime())
					for n := 0; n < b.N; n += batch {
						k := min(batch, b.N-n)
						if err := s.Apply(ctx, updates[n:n+k], strconv.Itoa(len(objs)+n+k)); err != nil {
							b.Fatal(err)
						}
					}
					b.StopTimer()
					b.ReportMetric(float64(writtenBytes(b)-w0)/float64(b.N), "write-B/op")
				})
			}
			must(b, db.Close())
			b.Run(prefix+"open", func(b *testing.B) {
				b.ReportAllocs()
				defer reportCPU(b, cpuTime())
				for i := 0; i < b.N; i++ {
					db, err := Open(ctx, path, opts)
					if err != nil {
						b.Fatal(err)
					}
					if _, err := db.Resource(ctx, ropts); err != nil {
						b.Fatal(err)
					}
					if err := db.Close(); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// benchConfigMap returns a small configmap (about 500 bytes of protobuf)
// in one of podgen.Namespaces namespaces, as benchPodList's pods are.
func benchConfigMap(i int) *corev1.ConfigMap {
	ns := fmt.Sprintf("ns-%03d", i%podgen.Namespaces)
	return &corev1.ConfigMap{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{
			Namespace:         ns,
			Name:              fmt.Sprintf("config-%d-%08d", i%97, i),
			UID:               types.UID(fmt.Sprintf("c0ffee00-0000-4000-8000-%012d", i)),
			ResourceVersion:   strconv.Itoa(i + 1),
			CreationTimestamp: metav1.Unix(1700000000+int64(i), 0),
			Labels:            map[string]string{"app": fmt.Sprintf("app-%d", i%97), "tier": "backend"},
		},
		Data: map[string]string{
			"config.yaml": strings.Repeat(fmt.Sprintf("key%d: value-%d\n", i%13, i), 16),
		},
	}
}

// writtenBytes returns the bytes the process has passed to write calls so
// far (wchar in /proc/self/io).
func writtenBytes(b *testing.B) int64 {
	b.Helper()
	f, err := os.Open("/proc/self/io")
	if err != nil {
		b.Skipf("no /proc/self/io: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "wchar: "); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			must(b, err)
			return n
		}
	}
	b.Skip("no wchar in /proc/self/io")
	return 0
}
