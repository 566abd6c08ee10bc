package bolt_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/warmcache/warmcache/store"
	"github.com/warmcache/warmcache/store/bolt"
	"github.com/warmcache/warmcache/store/bolt/inspect"
	"github.com/warmcache/warmcache/store/codec"
)

// pod returns the pod ns/name at resourceVersion rv. The examples make
// their objects themselves, so that each reads on its own.
func pod(ns, name, rv string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, ResourceVersion: rv}}
}

// Open a file, open the pods resource in it, relist, apply a watch batch,
// and find everything again after reopening.
func ExampleOpen() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "warmcache-example")
	defer func() { _ = os.RemoveAll(dir) }()
	path := filepath.Join(dir, "informers.db")
	opts := bolt.ResourceOptions{
		Identity: bolt.Identity{Version: "v1", Resource: "pods", Kind: "Pod"},
		Codec:    codec.Protobuf(nil),
		Indexers: cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc},
	}

	db, err := bolt.Open(ctx, path, bolt.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	pods, err := db.Resource(ctx, opts)
	if err != nil {
		fmt.Println(err)
		return
	}
	// A relist: the listed objects and the list's resourceVersion.
	_ = pods.Replace([]interface{}{pod("default", "a", "10"), pod("default", "b", "11")}, "12")
	// A watch batch, applied with the RV it reaches in one transaction.
	_ = pods.Apply(ctx, []cache.Transaction{
		{Type: cache.TransactionTypeUpdate, Object: pod("default", "a", "13")},
		{Type: cache.TransactionTypeDelete, Object: pod("default", "b", "14")},
	}, "14")
	_ = db.Close()

	// After a restart: resume from the recorded RV.
	db, err = bolt.Open(ctx, path, bolt.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer func() { _ = db.Close() }()
	pods, _ = db.Resource(ctx, opts)
	st, _ := pods.State()
	fmt.Println("rv", st.ResourceVersion, "complete", st.Complete, "objects", st.Objects)
	keys, _ := pods.IndexKeys(cache.NamespaceIndex, "default")
	fmt.Println(keys)
	// Output:
	// rv 14 complete true objects 1
	// [default/a]
}

// A file that is not a sound warmcache file is refused with ErrCorrupt;
// the cache is rebuilt from the apiserver after moving it aside.
func ExampleMoveAside() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "warmcache-example")
	defer func() { _ = os.RemoveAll(dir) }()
	path := filepath.Join(dir, "informers.db")
	_ = os.WriteFile(path, []byte("garbage"), 0o600)

	db, err := bolt.Open(ctx, path, bolt.Options{})
	if errors.Is(err, bolt.ErrCorrupt) {
		if _, err := bolt.MoveAside(path); err != nil {
			fmt.Println(err)
			return
		}
		db, err = bolt.Open(ctx, path, bolt.Options{})
	}
	if err != nil {
		fmt.Println(err)
		return
	}
	defer func() { _ = db.Close() }()
	fmt.Println("opened a new file")
	// Output: opened a new file
}

// Backup copies the file while writes go on; Resources lists what a file
// holds.
func ExampleDB_Backup() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "warmcache-example")
	defer func() { _ = os.RemoveAll(dir) }()
	db, _ := bolt.Open(ctx, filepath.Join(dir, "informers.db"), bolt.Options{})
	defer func() { _ = db.Close() }()
	pods, _ := db.Resource(ctx, bolt.ResourceOptions{
		Identity: bolt.Identity{Version: "v1", Resource: "pods", Kind: "Pod", Scope: store.Scope{Namespace: "default"}},
		Codec:    codec.Protobuf(nil),
	})
	_ = pods.Replace([]interface{}{pod("default", "a", "10")}, "10")

	backup := filepath.Join(dir, "backup.db")
	f, _ := os.Create(backup)
	if _, err := db.Backup(ctx, f); err != nil {
		fmt.Println(err)
		return
	}
	_ = f.Close()

	copyDB, err := bolt.Open(ctx, backup, bolt.Options{ReadOnly: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer func() { _ = copyDB.Close() }()
	infos, _ := inspect.Resources(ctx, copyDB)
	for _, in := range infos {
		fmt.Println(in.Identity.Resource, in.Identity.Namespace, in.ResourceVersion, in.State, in.Objects)
	}
	// Output: pods default 10 complete 1
}

// Open returns in a time independent of the file's size; every page of the
// data is then checked in the background. A program that wants the
// verdict (a health check, a tool) waits for it.
func ExampleDB_WaitFileCheck() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "warmcache-example")
	defer func() { _ = os.RemoveAll(dir) }()
	db, err := bolt.Open(ctx, filepath.Join(dir, "informers.db"), bolt.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer func() { _ = db.Close() }()
	res, err := db.WaitFileCheck(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("done: %v, sound: %v\n", res.Done, res.Err == nil && res.Corrupt == nil)
	// Output:
	// done: true, sound: true
}
