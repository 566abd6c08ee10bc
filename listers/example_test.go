package listers_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"

	"github.com/warmcache/warmcache/listers"
	corelisters "github.com/warmcache/warmcache/listers/core/v1"
	"github.com/warmcache/warmcache/store/bolt"
	"github.com/warmcache/warmcache/store/codec"
)

// A typed lister over a bolt store: the import of listers/core/v1 instead
// of client-go's, the same PodLister interface, and a List that decodes
// only the pods its namespace and selector select. An informer's
// GetIndexer is such a store; package informers' typed Lister() already
// returns these listers.
func Example() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "warmcache-example")
	defer func() { _ = os.RemoveAll(dir) }()
	db, err := bolt.Open(ctx, filepath.Join(dir, "cache.db"), bolt.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer func() { _ = db.Close() }()
	indexer, err := db.Resource(ctx, bolt.ResourceOptions{
		Identity: bolt.Identity{Version: "v1", Resource: "pods", Kind: "Pod"},
		Codec:    codec.Protobuf(nil),
		Indexers: cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	pod := func(ns, name, app string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, ResourceVersion: "1", Labels: map[string]string{"app": app}}}
	}
	_ = indexer.Replace([]interface{}{
		pod("team-a", "web-0", "web"), pod("team-a", "web-1", "web"),
		pod("team-a", "db-0", "db"), pod("team-b", "web-0", "web"),
	}, "1")

	lister := corelisters.NewPodLister(indexer) // k8s.io/client-go/listers/core/v1.PodLister
	web, _ := lister.Pods("team-a").List(labels.SelectorFromSet(labels.Set{"app": "web"}))
	fmt.Println("web pods in team-a:", len(web))
	all, _ := lister.List(labels.Everything())
	fmt.Println("pods:", len(all))
	_, err = lister.Pods("team-b").Get("db-0")
	fmt.Println("not found:", apierrors.IsNotFound(err))

	// The generic lister of any type, for a kind without a typed lister.
	pods := listers.New[*corev1.Pod](indexer, corev1.Resource("pods"))
	p, err := listers.NewNamespaced(pods, "team-b").Get("web-0")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(p.Namespace, p.Name)
	// Output:
	// web pods in team-a: 2
	// pods: 4
	// not found: true
	// team-b web-0
}
