package testenv_test

import (
	"context"
	"fmt"
	"os"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/warmcache/warmcache/internal/testenv"
)

// Start an environment and talk to it with client-go. In a test, pass the
// *testing.T instead of nil: Stop then runs when the test ends, and the
// process logs are printed if it failed. (The examples only compile:
// running one starts real processes.)
func ExampleStart() {
	ctx := context.Background()
	env, err := testenv.Start(ctx, nil, testenv.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer env.Stop()
	cs := kubernetes.NewForConfigOrDie(env.RestConfig())
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "example"}}
	if _, err := cs.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		fmt.Println(err)
		return
	}
	if _, err := cs.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{}); err != nil {
		fmt.Println(err)
		return
	}
	lists, err := env.ListRequests(ctx, "configmaps")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("LIST configmaps so far:", lists)
}

// One environment shared by a package's tests: the first test that asks
// starts it, TestMain stops it after the last one. Each test works in a
// namespace of its own and counts its own requests.
func ExampleShared() {
	var m *testing.M // TestMain's argument
	shared := testenv.NewShared(testenv.Options{})
	code := shared.Run(m) // m.Run(), then stop the environment

	// In a test (t *testing.T), which may run in parallel:
	test := func(ctx context.Context, t *testing.T) {
		t.Parallel()
		env := shared.Env(t)
		ns := env.Namespace(ctx, t, "mytest")
		cs := kubernetes.NewForConfigOrDie(env.RestConfig())
		if _, err := cs.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{}); err != nil {
			t.Fatal(err)
		}
		lists, err := env.Requests(ctx, testenv.RequestFilter{Verb: "list", Resource: "configmaps", Namespace: ns})
		if err != nil || lists != 1 {
			t.Fatalf("LIST configmaps in %s: %d, %v", ns, lists, err)
		}
	}
	_ = test
	os.Exit(code)
}

// 410 Gone on demand: without the watch cache, watches are served by etcd,
// so after Compact a watch from an older resourceVersion fails with 410.
// With the watch cache (the default), RestartAPIServer has that effect.
func ExampleEnv_Compact() {
	ctx := context.Background()
	env, err := testenv.Start(ctx, nil, testenv.Options{ExtraAPIServerArgs: []string{"--watch-cache=false"}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer env.Stop()
	rev, err := env.Compact(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("RVs older than", rev, "now answer 410 Gone")
}
