package factory

import (
	"fmt"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2/ktesting"

	"github.com/warmcache/warmcache/store/bolt"
)

// TestRealAPIServerWarmStartAndExpiry runs a factory's informer against a
// real kube-apiserver and etcd: a restart resumes the watch without a
// LIST and tells the handler only what changed while it was down; after
// an apiserver restart (the watch cache forgets old resourceVersions: 410)
// the relist diff again tells only the changes.
func TestRealAPIServerWarmStartAndExpiry(t *testing.T) {
	t.Parallel()
	ctx, env := ownAPIServer(t) // restarted below
	cs := kubernetes.NewForConfigOrDie(env.RestConfig())
	ns := env.Namespace(ctx, t, "warm")
	cms := cs.CoreV1().ConfigMaps(ns)
	create := func(name string) *corev1.ConfigMap {
		cm, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"v": "1"}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return cm
	}
	update := func(name string) *corev1.ConfigMap {
		cm, err := cms.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cm.Data["v"] += "1"
		if cm, err = cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		return cm
	}
	remove := func(name string) {
		if err := cms.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	a, b, c := create("a"), create("b"), create("c")
	path := filepath.Join(t.TempDir(), "real.db")
	gvr := corev1.SchemeGroupVersion.WithResource("configmaps")

	// run starts a factory's informer with a recorder, waits for sync and
	// n events, checks the store against the server and shuts down.
	var listsAtSync int
	run := func(n int) []event {
		t.Helper()
		l := ktesting.NewLogger(t, ktesting.NewConfig())
		f, err := New(ctx, Options{Path: path, RESTConfig: env.RestConfig(), Logger: &l, Bolt: bolt.Options{Sync: bolt.UnsafeNoSync}})
		if err != nil {
			t.Fatal(err)
		}
		defer func() {
			if err := f.Shutdown(); err != nil {
				t.Error(err)
			}
		}()
		inf, err := f.ForResource(ctx, gvr, "", Scope{Namespace: ns})
		if err != nil {
			t.Fatal(err)
		}
		rec := newRecorder()
		reg, err := inf.AddEventHandler(rec)
		if err != nil {
			t.Fatal(err)
		}
		f.Start(ctx)
		if !cache.WaitFor(ctx, "", inf.HasSyncedChecker(), reg.HasSyncedChecker()) {
			t.Fatal("not synced")
		}
		got := rec.WaitFor(t, n)
		listsAtSync = listRequests(ctx, t, env, "configmaps", ns)
		list, err := cms.List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]string{}
		for _, cm := range list.Items {
			want[ns+"/"+cm.Name] = cm.ResourceVersion
		}
		stored := map[string]string{}
		for _, o := range inf.GetStore().List() {
			cm := o.(*corev1.ConfigMap)
			stored[ns+"/"+cm.Name] = cm.ResourceVersion
		}
		if d := diffMaps(stored, want); d != "" {
			t.Fatalf("store differs from the server: %s", d)
		}
		return got
	}
	addEv := func(cm *corev1.ConfigMap, initial bool) event {
		return event(fmt.Sprintf("add %s/%s@%s initial=%v", ns, cm.Name, cm.ResourceVersion, initial))
	}

	equalEvents(t, sortedEvents(run(3)), sortedEvents([]event{addEv(a, true), addEv(b, true), addEv(c, true)}))

	// Warm start: changes made while down arrive through the resumed
	// watch, without a relist (one resume-check LIST of at most one
	// object); the handler is told the caught-up state as the initial
	// list, as after a cold start.
	b2 := update("b")
	remove("c")
	d := create("d")
	listsBefore := listRequests(ctx, t, env, "configmaps", ns)
	got := run(3)
	equalEvents(t, sortedEvents(got), sortedEvents([]event{addEv(a, true), addEv(b2, true), addEv(d, true)}))
	// Nothing but the resume check: one LIST of at most one object
	// reading the server's resourceVersion (package reflector).
	if listsAtSync != listsBefore+1 {
		t.Fatalf("%d LIST requests during the warm start, want the resume check only", listsAtSync-listsBefore)
	}

	// An apiserver restart empties its watch cache: the resume gets 410,
	// and the relist's state is the initial list.
	a2 := update("a")
	remove("d")
	e := create("e")
	if err := env.RestartAPIServer(ctx); err != nil {
		t.Fatal(err)
	}
	got = run(3)
	equalEvents(t, sortedEvents(got), sortedEvents([]event{addEv(a2, true), addEv(b2, true), addEv(e, true)}))
}
