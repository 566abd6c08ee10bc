package main

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/warmcache/warmcache/factory"
	"github.com/warmcache/warmcache/internal/testenv"
	"github.com/warmcache/warmcache/store/bolt"
	"github.com/warmcache/warmcache/store/bolt/inspect"
)

// shared is the package's etcd and kube-apiserver, started by the first
// test that asks and stopped after the last, before goleak looks for
// leaked goroutines.
var shared = testenv.NewShared(testenv.Options{})

func TestMain(m *testing.M) {
	ctrl.SetLogger(klog.Background())
	goleak.VerifyTestMain(shared.Wrap(m))
}

// started runs the manager until stop is called; synced is closed once its
// cache has synced.
type started struct {
	res    chan *result
	err    chan error
	synced chan struct{}
	cancel context.CancelFunc
}

func start(ctx context.Context, cfg config) *started {
	ctx, cancel := context.WithCancel(ctx)
	s := &started{res: make(chan *result, 1), err: make(chan error, 1), synced: make(chan struct{}), cancel: cancel}
	go func() {
		res, err := runWith(ctx, cfg, func(*result) { close(s.synced) })
		s.res <- res
		s.err <- err
	}()
	return s
}

func (s *started) stop(t *testing.T) *result {
	t.Helper()
	s.cancel()
	res, err := <-s.res, <-s.err
	if err != nil {
		t.Fatalf("manager: %v", err)
	}
	return res
}

func (s *started) waitSynced(ctx context.Context, t *testing.T) {
	t.Helper()
	select {
	case <-s.synced:
	case err := <-s.err:
		t.Fatalf("the manager ended before its cache synced: %v", err)
	case <-ctx.Done():
		t.Fatal("the manager's cache did not sync")
	}
}

// waitReconciled waits until every ConfigMap of want (name -> data value)
// carries the hash of its data and none of others carries one. The
// annotations are written by the manager: an external condition, polled
// with a deadline. It reads with GET, so that the apiserver's count of
// LIST requests is the manager's alone.
func waitReconciled(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns string, want map[string]string, others []string) {
	t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		for name, v := range want {
			cm, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			if got := cm.Annotations[hashAnnotation]; got != dataHash(map[string]string{"v": v}) {
				last = fmt.Sprintf("%s has hash %q", name, got)
				return false, nil
			}
		}
		for _, name := range others {
			cm, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			if _, has := cm.Annotations[hashAnnotation]; has {
				return false, fmt.Errorf("%s is not selected but was annotated", name)
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("ConfigMaps not reconciled: %v (%s)", err, last)
	}
}

// requests returns the apiserver's counts of LIST requests and of
// WatchList requests (a cold start streams instead of listing) for
// configmaps in namespace ns, from its audit log: the test's own, on an
// apiserver other tests share.
func requests(ctx context.Context, t *testing.T, env *testenv.Env, ns string) (lists, streams int) {
	t.Helper()
	lists, err := env.Requests(ctx, testenv.RequestFilter{Verb: "list", Resource: "configmaps", Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	streams, err = env.Requests(ctx, testenv.RequestFilter{Verb: "watchlist", Resource: "configmaps", Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	return lists, streams
}

func configMap(ns, name, value string, selected bool) *corev1.ConfigMap {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Data: map[string]string{"v": value}}
	if selected {
		cm.Labels = map[string]string{selectLabel: "true"}
	}
	return cm
}

// TestManagerRestartsWarm: a controller-runtime manager whose informers
// come from warmcache reconciles real ConfigMaps; restarted on the same
// file, it does not relist (the apiserver counts one LIST of at most one
// object, the resume check, and no WatchList stream of configmaps), and
// its reconciler patches exactly the ConfigMaps that changed or appeared
// while it was down: the replayed cache was right.
func TestManagerRestartsWarm(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts etcd and kube-apiserver; runs without -short")
	}
	ctx, cancel := context.WithTimeout(klog.NewContext(t.Context(), ktesting.NewLogger(t, ktesting.NewConfig())), 10*time.Minute)
	defer cancel()
	env := shared.Env(t)
	cs, err := kubernetes.NewForConfig(env.RestConfig())
	if err != nil {
		t.Fatal(err)
	}
	ns := env.Namespace(ctx, t, "restart")
	const n = 60
	want := map[string]string{}
	for i := range n {
		name := fmt.Sprintf("cm-%03d", i)
		if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, configMap(ns, name, "v1", true), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		want[name] = "v1"
	}
	var others []string
	for i := range 10 {
		name := fmt.Sprintf("other-%d", i)
		if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, configMap(ns, name, "x", false), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		others = append(others, name)
	}
	cfg := config{rest: env.RestConfig(), cacheFile: filepath.Join(t.TempDir(), "cache.db"), namespace: ns, skipNameValidation: true}

	first := start(ctx, cfg)
	first.waitSynced(ctx, t)
	waitReconciled(ctx, t, cs, ns, want, others)
	res := first.stop(t)
	if res.patched.Load() != n {
		t.Errorf("the first run patched %d ConfigMaps, want %d", res.patched.Load(), n)
	}
	if got := res.listed.Load(); got != n {
		t.Errorf("the first run's client listed %d selected ConfigMaps from the cache, want %d", got, n)
	}

	// While the manager is down: 5 changed, 5 new, 5 deleted.
	for i := range 5 {
		name := fmt.Sprintf("cm-%03d", i)
		patch := []byte(`{"data":{"v":"v2"}}`)
		if _, err := cs.CoreV1().ConfigMaps(ns).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		want[name] = "v2"
		name = fmt.Sprintf("new-%d", i)
		if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, configMap(ns, name, "v1", true), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		want[name] = "v1"
		name = fmt.Sprintf("cm-%03d", n-1-i)
		if err := cs.CoreV1().ConfigMaps(ns).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		delete(want, name)
	}
	lists0, streams0 := requests(ctx, t, env, ns)

	second := start(ctx, cfg)
	second.waitSynced(ctx, t)
	waitReconciled(ctx, t, cs, ns, want, others)
	res = second.stop(t)
	lists, streams := requests(ctx, t, env, ns)
	// The one informer of ConfigMaps makes one LIST of at most one object:
	// the resume check that reads the server's resourceVersion.
	if lists != lists0+1 || streams != streams0 {
		t.Errorf("the restarted manager's cache made %d LIST requests and %d WatchList requests for configmaps, want the resume check's LIST only", lists-lists0, streams-streams0)
	}
	if got := res.listed.Load(); got != int64(len(want)) {
		t.Errorf("the restarted manager's client listed %d selected ConfigMaps once synced, want %d", got, len(want))
	}
	if got := res.patched.Load(); got != 10 {
		t.Errorf("the restarted manager patched %d ConfigMaps, want the 10 changed or new ones", got)
	}
	if got := res.reconciles.Load(); got < int64(len(want)) {
		t.Errorf("the restarted manager reconciled %d times, want at least once per ConfigMap (%d): the replay", got, len(want))
	}

	// The file records the scope the cache applied.
	db, err := bolt.Open(ctx, cfg.cacheFile, bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	all, err := inspect.Resources(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	var infos []inspect.ResourceInfo // without the informers' sample objects
	for _, in := range all {
		if !factory.IsSample(in.Identity) {
			infos = append(infos, in)
		}
	}
	if len(infos) != 1 {
		t.Fatalf("the file holds %d resources, want the configmaps informer's: %+v", len(infos), infos)
	}
	id := infos[0].Identity
	if id.Resource != "configmaps" || id.Namespace != ns || id.LabelSelector != selectLabel+"=true" || infos[0].State != inspect.StateComplete {
		t.Errorf("recorded %+v, state %s; want configmaps in %s selected by %s=true, complete", id, infos[0].State, ns, selectLabel)
	}
}
