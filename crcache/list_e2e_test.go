package crcache

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/warmcache/warmcache/factory"
	"github.com/warmcache/warmcache/store/bolt"
	"github.com/warmcache/warmcache/store/seal"
)

// TestListMatchesControllerRuntime: crcache's List returns exactly what
// controller-runtime's default cache returns for the same options (typed,
// unstructured and metadata-only lists; InNamespace, MatchingLabels,
// MatchingLabelsSelector, MatchingFields on IndexField indexes, Limit),
// and the same errors (not started, unknown namespace, Continue,
// non-exact or unindexed fields); its informers are in the file, one per
// namespace and kind, metadata-only and unstructured ones apart.
func TestListMatchesControllerRuntime(t *testing.T) {
	t.Parallel()
	ctx, env, cs := startEnv(t)
	nss := seed(ctx, t, env, cs)
	s := newScheme(t)
	path := filepath.Join(t.TempDir(), "cache.db")
	sealKey, err := seal.NewKey([]byte("0123456789abcdef0123456789abcdef")) // Secrets persist sealed
	if err != nil {
		t.Fatal(err)
	}
	crc, err := NewCache(Options{Factory: factory.Options{Path: path, Bolt: bolt.Options{Sync: bolt.UnsafeNoSync}, Keys: seal.Static(sealKey)}})(env.RestConfig(), options(s, nss))
	if err != nil {
		t.Fatal(err)
	}
	def, err := cache.New(env.RestConfig(), options(s, nss))
	if err != nil {
		t.Fatal(err)
	}
	caches := map[string]cache.Cache{"crcache": crc, "controller-runtime": def}

	// Before Start, both refuse to read.
	for name, c := range caches {
		err := c.List(ctx, &corev1.ConfigMapList{})
		if _, ok := err.(*cache.ErrCacheNotStarted); !ok {
			t.Errorf("%s: List before Start = %v, want ErrCacheNotStarted", name, err)
		}
	}
	for name, c := range caches {
		if err := c.IndexField(ctx, &corev1.ConfigMap{}, "data.v", indexV); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if err := c.IndexField(ctx, &corev1.ConfigMap{}, "app", indexApp); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		caches[name] = run(ctx, t, c)
	}
	lists := map[string]func() client.ObjectList{
		"typed": func() client.ObjectList { return &corev1.ConfigMapList{} },
		"unstructured": func() client.ObjectList {
			u := &unstructured.UnstructuredList{}
			u.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ConfigMapList"))
			return u
		},
		"metadata": func() client.ObjectList {
			m := &metav1.PartialObjectMetadataList{}
			m.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ConfigMapList"))
			return m
		},
	}
	set, _ := labels.Parse("tier in (1,2),app!=z")
	for _, tc := range []struct {
		name    string
		opts    []client.ListOption
		want    int // items
		wantErr bool
		typed   bool // typed lists only (IndexField indexes typed objects)
	}{
		{name: "everything", want: 24},
		{name: "InNamespace", opts: []client.ListOption{client.InNamespace(nss.a)}, want: 12},
		{name: "MatchingLabels", opts: []client.ListOption{client.MatchingLabels{"app": "x"}}, want: 8},
		{name: "MatchingLabelsSelector", opts: []client.ListOption{client.MatchingLabelsSelector{Selector: set}}, want: 8},
		{name: "InNamespace and MatchingLabels", opts: []client.ListOption{client.InNamespace(nss.b), client.MatchingLabels{"app": "y", "tier": "1"}}, want: 1},
		{name: "MatchingFields", opts: []client.ListOption{client.MatchingFields{"data.v": "v1"}}, want: 8, typed: true},
		{name: "MatchingFields in a namespace", opts: []client.ListOption{client.InNamespace(nss.a), client.MatchingFields{"data.v": "v1", "app": "y"}}, want: 4, typed: true},
		{name: "MatchingFields and labels", opts: []client.ListOption{client.MatchingFields{"data.v": "v2"}, client.MatchingLabels{"tier": "2"}}, want: 2, typed: true},
		{name: "Limit in a namespace", opts: []client.ListOption{client.InNamespace(nss.a), client.Limit(5)}, want: 5},
		{name: "unknown namespace", opts: []client.ListOption{client.InNamespace(nss.c)}, wantErr: true},
		{name: "Continue", opts: []client.ListOption{client.Continue("x")}, wantErr: true},
		{name: "non-exact field", opts: []client.ListOption{client.MatchingFieldsSelector{Selector: fields.OneTermNotEqualSelector("data.v", "v1")}}, wantErr: true},
		{name: "unindexed field", opts: []client.ListOption{client.MatchingFields{"data.w": "v1"}}, wantErr: true},
	} {
		for kind, newList := range lists {
			if tc.typed && kind != "typed" {
				continue
			}
			t.Run(tc.name+"/"+kind, func(t *testing.T) {
				got, want := newList(), newList()
				gerr := caches["crcache"].List(ctx, got, tc.opts...)
				werr := caches["controller-runtime"].List(ctx, want, tc.opts...)
				if (gerr != nil) != tc.wantErr || (werr != nil) != tc.wantErr {
					t.Fatalf("errors: crcache %v, controller-runtime %v; want an error: %v", gerr, werr, tc.wantErr)
				}
				if tc.wantErr {
					if gerr.Error() != werr.Error() {
						t.Errorf("crcache's error %q, controller-runtime's %q", gerr, werr)
					}
					return
				}
				gi, wi := items(t, got), items(t, want)
				if len(gi) != tc.want || len(wi) != tc.want {
					t.Fatalf("crcache listed %d, controller-runtime %d; want %d", len(gi), len(wi), tc.want)
				}
				if got.GetContinue() != want.GetContinue() {
					t.Errorf("continue %q, want %q", got.GetContinue(), want.GetContinue())
				}
				// A limit takes any n items: compare contents only without one.
				limited := false
				for _, o := range tc.opts {
					_, l := o.(client.Limit)
					limited = limited || l
				}
				if !limited {
					if d := cmp.Diff(wi, gi); d != "" {
						t.Errorf("crcache's items differ from controller-runtime's (-want +got):\n%s", d)
					}
				}
			})
		}
	}

	// A ByObject selector: Secrets of team a only, in both namespaces.
	gs, ws := &corev1.SecretList{}, &corev1.SecretList{}
	if err := caches["crcache"].List(ctx, gs); err != nil {
		t.Fatal(err)
	}
	if err := caches["controller-runtime"].List(ctx, ws); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(items(t, ws), items(t, gs)); d != "" || len(gs.Items) != 4 {
		t.Errorf("Secrets: crcache listed %d, want the 4 of team a in a and b (-want +got):\n%s", len(gs.Items), d)
	}
	// Get is a point read with controller-runtime's results.
	var gc, wc corev1.ConfigMap
	key := client.ObjectKey{Namespace: nss.b, Name: "cm-03"}
	if err := caches["crcache"].Get(ctx, key, &gc); err != nil {
		t.Fatal(err)
	}
	if err := caches["controller-runtime"].Get(ctx, key, &wc); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(wc, gc); d != "" {
		t.Errorf("Get differs (-want +got):\n%s", d)
	}

	caches["crcache"].(*running).stop(t)
	infos := resources(ctx, t, path)
	want := map[string]bool{}
	for _, ns := range []string{nss.a, nss.b} {
		want[fmt.Sprintf("configmaps ConfigMap %s", ns)] = true
		want[fmt.Sprintf("configmaps %s %s", factory.MetadataKind, ns)] = true
		want[fmt.Sprintf("configmaps %s %s", factory.UnstructuredKind, ns)] = true
		want[fmt.Sprintf("secrets Secret %s team=a", ns)] = true
	}
	got := map[string]bool{}
	for _, in := range infos {
		id := in.Identity
		k := fmt.Sprintf("%s %s %s", id.Resource, id.Kind, id.Namespace)
		if id.LabelSelector != "" {
			k += " " + id.LabelSelector
		}
		got[k] = true
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("the file's resources (-want +got):\n%s", d)
	}
}
