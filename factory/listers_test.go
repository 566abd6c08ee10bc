package factory_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	clientcorelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"

	"github.com/warmcache/warmcache/factory"
	"github.com/warmcache/warmcache/informers"
	"github.com/warmcache/warmcache/internal/fakeapi"
	"github.com/warmcache/warmcache/internal/fakesource"
	"github.com/warmcache/warmcache/store/bolt"
	"github.com/warmcache/warmcache/store/codec"
)

// countingCodec counts the payloads it decodes.
type countingCodec struct {
	codec.Codec
	decoded *atomic.Int64
}

func (c countingCodec) Decode(data []byte) (runtime.Object, error) {
	c.decoded.Add(1)
	return c.Codec.Decode(data)
}

// The listers of package informers' factory (the typed Lister() and
// ForResource's) answer as client-go's listers over the same informer, and
// decode only the objects they return, where client-go's decode every
// object they read.
func TestFactoryListersDecodeOnlyMatches(t *testing.T) {
	src, err := fakesource.New(fakesource.Options{})
	if err != nil {
		t.Fatal(err)
	}
	const perNS = 40
	for _, ns := range []string{"ns-0", "ns-1", "ns-2"} {
		for i := range perNS {
			l := map[string]string{"app": fmt.Sprintf("app-%d", i%4)}
			if i%3 == 0 {
				l["tier"] = "web"
			}
			if _, err := src.Add(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("p-%02d", i), Labels: l}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	srv, err := fakeapi.Start(t.Context(), fakeapi.Options{Source: src})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ctx := klog.NewContext(t.Context(), ktesting.NewLogger(t, ktesting.NewConfig()))
	noHot := int64(0)
	wf, err := factory.New(ctx, factory.Options{
		Path: filepath.Join(t.TempDir(), "cache.db"),
		// Without the hot tier every object read is decoded.
		Bolt: bolt.Options{Sync: bolt.UnsafeNoSync, HotBytes: &noHot},
	})
	if err != nil {
		t.Fatal(err)
	}
	var decoded atomic.Int64
	factory.WrapCodecs(wf, func(c codec.Codec) codec.Codec { return countingCodec{c, &decoded} })
	client := kubernetes.NewForConfigOrDie(srv.Config("application/vnd.kubernetes.protobuf"))
	f := informers.NewSharedInformerFactoryWithContext(ctx, wf, client, 0)
	defer f.Shutdown()
	pods := f.Core().V1().Pods()
	generic, err := f.ForResource(corev1.SchemeGroupVersion.WithResource("pods"))
	if err != nil {
		t.Fatal(err)
	}
	f.Start(ctx.Done())
	waitCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for typ, ok := range f.WaitForCacheSync(waitCtx.Done()) {
		if !ok {
			t.Fatalf("%v did not sync", typ)
		}
	}
	const total = 3 * perNS
	theirs := clientcorelisters.NewPodLister(pods.Informer().GetIndexer())
	ours := pods.Lister()

	// measure returns what fn listed and how many objects it decoded.
	measure := func(fn func() ([]string, error)) ([]string, int64) {
		t.Helper()
		before := decoded.Load()
		got, err := fn()
		if err != nil {
			t.Fatal(err)
		}
		return got, decoded.Load() - before
	}
	podKeys := func(ps []*corev1.Pod, err error) ([]string, error) {
		var out []string
		for _, p := range ps {
			out = append(out, p.Namespace+"/"+p.Name)
		}
		sort.Strings(out)
		return out, err
	}
	objKeys := func(objs []runtime.Object, err error) ([]string, error) {
		var ps []*corev1.Pod
		for _, o := range objs {
			ps = append(ps, o.(*corev1.Pod))
		}
		return podKeys(ps, err)
	}
	for _, s := range []string{"app=app-1", "app=app-2,tier", "app in (app-0,app-3)", "!tier", "app=none"} {
		sel, err := labels.Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		for _, ns := range []string{"", "ns-1"} {
			var mine, gen, exp func() ([]string, error)
			if ns == "" {
				mine = func() ([]string, error) { return podKeys(ours.List(sel)) }
				gen = func() ([]string, error) { return objKeys(generic.Lister().List(sel)) }
				exp = func() ([]string, error) { return podKeys(theirs.List(sel)) }
			} else {
				mine = func() ([]string, error) { return podKeys(ours.Pods(ns).List(sel)) }
				gen = func() ([]string, error) { return objKeys(generic.Lister().ByNamespace(ns).List(sel)) }
				exp = func() ([]string, error) { return podKeys(theirs.Pods(ns).List(sel)) }
			}
			want, clientGoDecoded := measure(exp)
			read := int64(total)
			if ns != "" {
				read = perNS
			}
			if clientGoDecoded != read {
				t.Fatalf("client-go's lister decoded %d objects for %q in %q, want %d: the counter does not count", clientGoDecoded, s, ns, read)
			}
			for name, fn := range map[string]func() ([]string, error){"typed": mine, "generic": gen} {
				got, n := measure(fn)
				if !slices.Equal(got, want) {
					t.Errorf("%s lister, %q in %q: %q, client-go's %q", name, s, ns, got, want)
				}
				if n != int64(len(want)) {
					t.Errorf("%s lister, %q in %q: decoded %d objects to return %d", name, s, ns, n, len(want))
				}
			}
		}
	}
}
