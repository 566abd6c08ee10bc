package cli_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/warmcache/warmcache/cmd/snapshot/internal/cli"
	"github.com/warmcache/warmcache/store/bolt"
	"github.com/warmcache/warmcache/store/codec"
)

// writeExampleCache writes a cache file with two pods, as an informer
// would, and returns its path.
func writeExampleCache(dir string) (string, error) {
	path := filepath.Join(dir, "cache.db")
	ctx := context.Background()
	db, err := bolt.Open(ctx, path, bolt.Options{Logger: klog.Background()})
	if err != nil {
		return "", err
	}
	defer func() { _ = db.Close() }()
	s, err := db.Resource(ctx, bolt.ResourceOptions{
		Identity: bolt.Identity{Version: "v1", Resource: "pods", Kind: "Pod"},
		Codec:    codec.Protobuf(nil),
		Indexers: cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc},
	})
	if err != nil {
		return "", err
	}
	created := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	var pods []interface{}
	for i, phase := range []corev1.PodPhase{corev1.PodRunning, corev1.PodPending} {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "web", Name: fmt.Sprintf("web-%d", i), ResourceVersion: fmt.Sprint(10 + i), CreationTimestamp: created},
			Spec:       corev1.PodSpec{NodeName: "node-1", Containers: []corev1.Container{{Name: "app"}}},
			Status:     corev1.PodStatus{Phase: phase, PodIP: fmt.Sprintf("10.0.0.%d", i+1)},
		}
		pods = append(pods, pod)
	}
	// The informer's initial list.
	if err := s.Replace(pods, "11"); err != nil {
		return "", err
	}
	return path, db.Close()
}

// Run is what package main calls; a test or another program can call it
// with its own streams and clock.
func ExampleRun() {
	dir, err := os.MkdirTemp("", "snapshot-example-")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer func() { _ = os.RemoveAll(dir) }()
	path, err := writeExampleCache(dir)
	if err != nil {
		fmt.Println(err)
		return
	}
	env := cli.Env{
		Stdout: os.Stdout,
		Stderr: os.Stdout,
		Now:    func() time.Time { return time.Date(2026, 1, 3, 0, 0, 0, 0, time.UTC) },
	}
	code := cli.Run(context.Background(), env, []string{"list", path, "pods", "-n", "web", "-o", "wide"})
	fmt.Println("exit code", code)
	code = cli.Run(context.Background(), env, []string{"list", path, "pods", "-o", "xml"})
	fmt.Println("exit code", code)
	// Output:
	// NAME    READY   STATUS    RESTARTS   AGE   IP         NODE     NOMINATED NODE   READINESS GATES
	// web-0   0/1     Running   0          2d    10.0.0.1   node-1   <none>           <none>
	// web-1   0/1     Pending   0          2d    10.0.0.2   node-1   <none>           <none>
	// exit code 0
	// error: unknown output format "xml": allowed formats are table, wide, json, yaml, name, jsonpath=..., custom-columns=..., go-template=...
	// Run 'snapshot list --help' for usage.
	// exit code 2
}
