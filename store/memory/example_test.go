package memory_test

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/warmcache/warmcache/store/memory"
)

func Example() {
	s, err := memory.New(memory.Options{
		Indexers: cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()

	mk := func(ns, name, rv string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, ResourceVersion: rv}}
	}

	// A relist: stage pages, see what vanished, commit atomically.
	ctx := context.Background()
	r, err := s.BeginReplace(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	_ = r.Add(ctx, mk("team-a", "web-1", "10"), mk("team-a", "web-2", "11"))
	_ = r.Add(ctx, mk("team-b", "db-1", "12"))
	if err := r.Commit(ctx, "12"); err != nil {
		fmt.Println(err)
		return
	}

	// Watch events arrive as incremental writes.
	_ = s.Add(mk("team-b", "db-2", "13"))
	_ = s.Delete(mk("team-a", "web-1", "14"))

	st, _ := s.State()
	fmt.Printf("rv=%s complete=%v objects=%d\n", st.ResourceVersion, st.Complete, st.Objects)

	// client-go's typed listers work on the store.
	pods, _ := corelisters.NewPodLister(s).Pods("team-b").List(labels.Everything())
	fmt.Println("team-b pods:", len(pods))

	// Scan visits objects in key order.
	_ = s.Scan(ctx, func(key string, _ interface{}) error {
		fmt.Println(key)
		return nil
	})
	// Output:
	// rv=14 complete=true objects=3
	// team-b pods: 2
	// team-a/web-2
	// team-b/db-1
	// team-b/db-2
}

// A relist tells which stored objects the server no longer has before the
// new content becomes visible.
func ExampleStore_BeginReplace() {
	s, err := memory.New(memory.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()
	mk := func(name, rv string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, ResourceVersion: rv}}
	}
	_ = s.Replace([]interface{}{mk("a", "1"), mk("b", "2"), mk("c", "3")}, "3")

	ctx := context.Background()
	r, err := s.BeginReplace(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer r.Abort()
	_ = r.Add(ctx, mk("b", "2"), mk("d", "7"))
	_ = r.Vanished(ctx, func(key string, obj interface{}) error {
		fmt.Printf("vanished %s (last rv %s)\n", key, obj.(*corev1.Pod).ResourceVersion)
		return nil
	})
	fmt.Println("before commit:", len(s.ListKeys()), "objects")
	_ = r.Commit(ctx, "8")
	fmt.Println("after commit:", len(s.ListKeys()), "objects at rv", s.LastStoreSyncResourceVersion())
	// Output:
	// vanished ns/a (last rv 1)
	// vanished ns/c (last rv 3)
	// before commit: 3 objects
	// after commit: 2 objects at rv 8
}
