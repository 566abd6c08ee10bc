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

// One environment shared by a package's tests, started in TestMain.
func ExampleStart_testMain() {
	var m *testing.M // TestMain's argument
	env, err := testenv.Start(context.Background(), nil, testenv.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	env.Stop() // with a nil testing.TB, stopping is the caller's job
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
