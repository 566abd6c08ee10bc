package testenv

import (
	"errors"
	"syscall"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// TestShared: a Shared environment starts on first use, gives each caller a
// namespace of its own whose requests it counts apart, refuses what would
// disturb other tests, survives a test's Stop, and stops with Shared.Stop.
func TestShared(t *testing.T) {
	ctx := needProcesses(t)
	s := NewShared(Options{})
	t.Cleanup(s.Stop)
	env := s.Env(t)
	if again := s.Env(t); again != env {
		t.Fatal("a second Env started a second environment")
	}
	cs, err := kubernetes.NewForConfig(env.RestConfig())
	if err != nil {
		t.Fatal(err)
	}

	a, b := env.Namespace(ctx, t, "shared"), env.Namespace(ctx, t, "shared")
	if a == b {
		t.Fatalf("two calls gave the same namespace %s", a)
	}
	for ns, n := range map[string]int{a: 2, b: 1} {
		for range n {
			if _, err := cs.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	w, err := cs.CoreV1().ConfigMaps(b).Watch(ctx, metav1.ListOptions{
		SendInitialEvents:    new(true),
		ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan,
		AllowWatchBookmarks:  true,
	})
	if err != nil {
		t.Fatal(err)
	}
	w.Stop()
	for _, tc := range []struct {
		f    RequestFilter
		want int
	}{
		{RequestFilter{Verb: "list", Resource: "configmaps", Namespace: a}, 2},
		{RequestFilter{Verb: "list", Resource: "configmaps", Namespace: b}, 1},
		{RequestFilter{Verb: "watch", Resource: "configmaps", Namespace: b}, 1},
		{RequestFilter{Verb: "watchlist", Resource: "configmaps", Namespace: b}, 1},
		{RequestFilter{Verb: "watchlist", Resource: "configmaps", Namespace: a}, 0},
		{RequestFilter{Verb: "list", Resource: "secrets", Namespace: a}, 0},
	} {
		if got, err := env.Requests(ctx, tc.f); err != nil || got != tc.want {
			t.Errorf("Requests(%+v) = %d, %v; want %d", tc.f, got, err, tc.want)
		}
	}

	if err := env.RestartAPIServer(ctx); !errors.Is(err, ErrShared) {
		t.Errorf("RestartAPIServer = %v, want ErrShared", err)
	}
	if _, err := env.Compact(ctx); !errors.Is(err, ErrShared) {
		t.Errorf("Compact = %v, want ErrShared", err)
	}
	if _, err := env.SaveEtcdData(ctx); !errors.Is(err, ErrShared) {
		t.Errorf("SaveEtcdData = %v, want ErrShared", err)
	}
	if err := env.RestartWithEtcdData(ctx, ""); !errors.Is(err, ErrShared) {
		t.Errorf("RestartWithEtcdData = %v, want ErrShared", err)
	}
	env.Stop() // a test's Stop leaves the shared processes running
	if _, err := cs.CoreV1().Namespaces().Get(ctx, a, metav1.GetOptions{}); err != nil {
		t.Errorf("the shared apiserver stopped with a test's Stop: %v", err)
	}

	etcd, apiserver, err := env.processes()
	if err != nil {
		t.Fatal(err)
	}
	s.Stop()
	for _, p := range []*process{etcd, apiserver} {
		if err := syscall.Kill(p.pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("%s pid %d after Shared.Stop: kill(0) = %v, want ESRCH", p.name, p.pid, err)
		}
	}
	if _, err := env.Requests(ctx, RequestFilter{}); !errors.Is(err, ErrStopped) {
		t.Errorf("Requests after Shared.Stop = %v, want ErrStopped", err)
	}
}
