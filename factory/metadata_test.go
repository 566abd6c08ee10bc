package factory

import (
	"context"
	"path/filepath"
	"sort"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/warmcache/warmcache/informer"
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
