package factory

import (
	"context"
	"path/filepath"
	"slices"
	"sort"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	metadatafake "k8s.io/client-go/metadata/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/watchlist"

	"github.com/warmcache/warmcache/informer"
	"github.com/warmcache/warmcache/internal/testkit"
	"github.com/warmcache/warmcache/store/bolt"
	"github.com/warmcache/warmcache/store/bolt/inspect"
	"github.com/warmcache/warmcache/store/seal"
)

// TestMetadataInformerHasItsOwnIdentity: a metadata-only informer and the
// full-object informer of the same resource and scope are two informers
// with two stores in the file (kinds Secret and MetadataKind); what one
// stores the other never sees, and the metadata-only objects survive a
// reopen with their TypeMeta.
func TestMetadataInformerHasItsOwnIdentity(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f.db")
	ctx := context.Background()
	gvr := corev1.SchemeGroupVersion.WithResource("secrets")
	metaExample := func() *metav1.PartialObjectMetadata {
		m := &metav1.PartialObjectMetadata{}
		m.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
		return m
	}
	keys := seal.Static(testKey(t)) // Secrets are persisted sealed
	open := func() (*Factory, *metav1.PartialObjectMetadata) {
		f, _ := sealFactory(t, path, "", keys)
		full, err := f.InformerFor(ctx, gvr, &corev1.Secret{}, nopLW, Scope{Namespace: "ns"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		meta, err := f.InformerFor(ctx, gvr, metaExample(), nopLW, Scope{Namespace: "ns"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if full == meta {
			t.Fatal("the metadata-only informer is the full-object informer")
		}
		if n := len(full.GetIndexer().ListKeys()); n != 0 {
			t.Errorf("the full-object store holds %d objects, want none", n)
		}
		obj, ok, err := meta.GetIndexer().GetByKey("ns/s")
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			o := metaExample()
			o.Namespace, o.Name, o.ResourceVersion, o.Labels = "ns", "s", "7", map[string]string{"a": "b"}
			if err := meta.GetIndexer().Add(o); err != nil {
				t.Fatal(err)
			}
			return f, nil
		}
		return f, obj.(*metav1.PartialObjectMetadata)
	}
	f, got := open()
	if got != nil {
		t.Fatalf("a new file holds %v", got)
	}
	if err := f.Shutdown(); err != nil {
		t.Fatal(err)
	}
	f, got = open()
	if err := f.Shutdown(); err != nil {
		t.Fatal(err)
	}
	if got == nil || got.Kind != "Secret" || got.APIVersion != "v1" || got.Labels["a"] != "b" || got.ResourceVersion != "7" {
		t.Fatalf("reopened metadata object = %+v, want ns/s of kind v1 Secret, label a=b, RV 7", got)
	}

	db, err := bolt.Open(ctx, path, bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	infos, err := inspect.Resources(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, in := range withoutSamples(infos) {
		if in.Identity.Resource != "secrets" || in.Identity.Namespace != "ns" {
			t.Errorf("unexpected resource %+v", in.Identity)
		}
		kinds = append(kinds, in.Identity.Kind)
	}
	sort.Strings(kinds)
	if len(kinds) != 2 || kinds[0] != MetadataKind || kinds[1] != "Secret" {
		t.Errorf("recorded kinds %v, want [%s Secret]", kinds, MetadataKind)
	}
}

// TestHookServesMetadataInformers: controller-runtime's hook gives a
// metadata-only example a persistent informer, not client-go's in-memory
// fallback.
func TestHookServesMetadataInformers(t *testing.T) {
	f := newFactory(t, filepath.Join(t.TempDir(), "f.db"), "")
	defer func() {
		if err := f.Shutdown(); err != nil {
			t.Error(err)
		}
	}()
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
	inf := f.NewInformerFunc(context.Background(), nil)(nopLW, m, 0, nil)
	if _, ok := inf.(*informer.Informer); !ok {
		t.Fatalf("the hook returned %T, want a persistent *informer.Informer", inf)
	}
	full := f.NewInformerFunc(context.Background(), nil)(nopLW, &corev1.Secret{}, 0, nil)
	if _, ok := full.(*informer.Informer); !ok || full == inf {
		t.Fatalf("the full-object informer is %T (the metadata one: %v), want its own persistent informer", full, full == inf)
	}
	// Run by the caller: stop them before Shutdown.
	done, cancel := context.WithCancel(context.Background())
	cancel()
	inf.RunWithContext(done)
	full.RunWithContext(done)
}

// TestMetadataListWatchOfFakeClient runs client-go's informer over
// MetadataListWatch of client-go's fake metadata client, which cannot
// stream a list: the list-watch says so (as the client does), so the
// reflector lists and watches instead of asking for a WatchList the fake
// never answers, syncs, and follows the fake's watch.
func TestMetadataListWatchOfFakeClient(t *testing.T) {
	podMeta := func(name string) *metav1.PartialObjectMetadata {
		m := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}}
		m.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Pod"))
		return m
	}
	scheme := metadatafake.NewTestScheme()
	metav1.AddMetaToScheme(scheme)
	client := metadatafake.NewSimpleMetadataClient(scheme, podMeta("a"))
	lw := MetadataListWatch(client, podsGVR, "Pod", Scope{Namespace: "ns"})
	if !watchlist.DoesClientNotSupportWatchListSemantics(lw) {
		t.Fatal("the list-watch of a fake metadata client does not say that it cannot stream a list")
	}
	inf := cache.NewSharedIndexInformer(lw, &metav1.PartialObjectMetadata{}, 0, cache.Indexers{})
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Timeout())
	defer cancel()
	go inf.RunWithContext(ctx)
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		t.Fatal("the informer never synced on the fake metadata client")
	}
	if _, err := client.Resource(podsGVR).Namespace("ns").(metadatafake.MetadataClient).CreateFake(podMeta("b"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextCancel(ctx, time.Millisecond, true, func(context.Context) (bool, error) {
		keys := inf.GetStore().ListKeys()
		sort.Strings(keys)
		return slices.Equal(keys, []string{"ns/a", "ns/b"}), nil
	}); err != nil {
		t.Fatalf("the informer never saw ns/b created through the fake's watch (keys %v)", inf.GetStore().ListKeys())
	}
	for _, k := range inf.GetStore().ListKeys() {
		obj, _, _ := inf.GetStore().GetByKey(k)
		if gvk := obj.(*metav1.PartialObjectMetadata).GroupVersionKind(); gvk.Kind != "Pod" {
			t.Fatalf("%s has kind %q, want Pod", k, gvk.Kind)
		}
	}
}
