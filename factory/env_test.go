package factory

import (
	"context"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/warmcache/warmcache/internal/testenv"
)

// shared is the package's etcd and kube-apiserver: started by the first
// test that needs one (realAPIServer), stopped by TestMain after the last
// test.
var shared struct {
	once sync.Once
	env  *testenv.Env
	err  error
}

// realAPIServer returns the package's etcd and kube-apiserver, starting
// them on first use (the first run builds the binaries: minutes), and the
// test's context, bounded. It skips the test under -short.
//
// The tests sharing it run one at a time (none is parallel): each works
// in a namespace of its own and never stops the environment; one may
// restart the apiserver (Env.RestartAPIServer), whose client configuration
// stays valid.
func realAPIServer(t *testing.T) (context.Context, *testenv.Env) {
	t.Helper()
	if testing.Short() {
		t.Skip("uses etcd and kube-apiserver (the first run builds them, minutes); runs without -short (make test)")
	}
	shared.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
		defer cancel()
		shared.env, shared.err = testenv.Start(ctx, nil, testenv.Options{})
	})
	if shared.err != nil {
		t.Fatal(shared.err)
	}
	env := shared.env
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("testenv: process logs in %s\n%s", env.Dir(), env.LogTails())
		}
	})
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	t.Cleanup(cancel)
	return ctx, env
}

// newNamespace creates a namespace named prefix-<generated>: the tests
// sharing the environment, and their repeats (-count), never meet.
func newNamespace(ctx context.Context, t *testing.T, cs kubernetes.Interface, prefix string) string {
	t.Helper()
	ns, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix + "-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return ns.Name
}

// stopSharedEnv stops the package's etcd and kube-apiserver, if a test
// started them.
func stopSharedEnv() {
	if shared.env != nil {
		shared.env.Stop()
	}
}

// stopAfter runs the tests, then stops the shared environment, before
// goleak looks for leaked goroutines.
type stopAfter struct{ m *testing.M }

func (s stopAfter) Run() int {
	defer stopSharedEnv()
	return s.m.Run()
}
