package factory

import (
	"context"
	"path/filepath"
	"sort"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2/ktesting"

	"github.com/warmcache/warmcache/store/bolt"
	"github.com/warmcache/warmcache/store/seal"
)

// TestRealAPIServerMetadataInformer: ForMetadata lists and watches
// Secrets' metadata from a real kube-apiserver (the metadata client), with
// their kind set; a second factory on the same file resumes without a
// LIST of secrets and sees a Secret created while it was down.
func TestRealAPIServerMetadataInformer(t *testing.T) {
	t.Parallel()
	ctx, env := realAPIServer(t)
	cs := kubernetes.NewForConfigOrDie(env.RestConfig())
	ns := env.Namespace(ctx, t, "meta")
	create := func(name string) {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"k": name}}, StringData: map[string]string{"password": "x"}}
		if _, err := cs.CoreV1().Secrets(ns).Create(ctx, s, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	create("a")
	create("b")
	path := filepath.Join(t.TempDir(), "meta.db")
	keys := seal.Static(testKey(t))
	gvr := corev1.SchemeGroupVersion.WithResource("secrets")
	run := func(want ...string) {
		t.Helper()
		l := ktesting.NewLogger(t, ktesting.NewConfig())
		f, err := New(ctx, Options{Path: path, RESTConfig: env.RestConfig(), Logger: &l, Bolt: bolt.Options{Sync: bolt.UnsafeNoSync},
			Keys: keys}) // Secrets, metadata-only too, are persisted sealed
		if err != nil {
			t.Fatal(err)
		}
		defer func() {
			if err := f.Shutdown(); err != nil {
				t.Error(err)
			}
		}()
		inf, err := f.ForMetadata(ctx, gvr, "Secret", Scope{Namespace: ns})
		if err != nil {
			t.Fatal(err)
		}
		f.Start(ctx)
		if synced := f.WaitForCacheSync(ctx); len(synced) != 1 {
			t.Fatalf("synced %v", synced)
		}
		// Events after the resumed watch's start (c, created while the
		// factory was down) arrive after the sync: an external event,
		// polled with a deadline.
		_ = wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
			return len(inf.GetIndexer().ListKeys()) >= len(want), nil
		})
		var got []string
		for _, o := range inf.GetIndexer().List() {
			m, ok := o.(*metav1.PartialObjectMetadata)
			if !ok {
				t.Fatalf("stored %T, want *metav1.PartialObjectMetadata", o)
			}
			if m.Kind != "Secret" || m.APIVersion != "v1" || m.Labels["k"] != m.Name {
				t.Errorf("%s: TypeMeta %v labels %v", m.Name, m.TypeMeta, m.Labels)
			}
			got = append(got, m.Name)
		}
		sort.Strings(got)
		if len(got) != len(want) {
			t.Fatalf("stored %v, want %v", got, want)
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("stored %v, want %v", got, want)
			}
		}
	}
	run("a", "b")
	create("c")
	lists0 := listRequests(ctx, t, env, "secrets", ns)
	// The warm start resumes the watch from the stored resourceVersion,
	// which delivers c.
	run("a", "b", "c")
	if lists := listRequests(ctx, t, env, "secrets", ns); lists != lists0+1 {
		t.Errorf("the warm start made %d LIST requests of secrets, want the resume check only", lists-lists0)
	}
}
