package crcache_test

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/warmcache/warmcache/crcache"
	"github.com/warmcache/warmcache/factory"
)

// A manager adopts warmcache with one option, NewCache; its cache.Options
// are controller-runtime's. Here: two namespaces (one informer per
// namespace and kind), ConfigMaps selected by a label, Secrets read as
// metadata only. The manager's client lists from the file, decoding only
// what matches.
func ExampleNewCache() {
	cfg, err := ctrl.GetConfig()
	if err != nil {
		fmt.Println(err)
		return
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Cache: cache.Options{
			DefaultNamespaces: map[string]cache.Config{"team-a": {}, "team-b": {}},
			ByObject: map[client.Object]cache.ByObject{
				&corev1.ConfigMap{}: {Label: labels.SelectorFromSet(labels.Set{"app": "web"})},
			},
		},
		NewCache: crcache.NewCache(crcache.Options{Factory: factory.Options{Path: "/var/cache/my-controller/cache.db"}}),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := ctrl.SetupSignalHandler()
	go func() {
		// The cache closes the file when the manager stops.
		_ = mgr.Start(ctx)
	}()
	if !mgr.GetCache().WaitForCacheSync(ctx) {
		return
	}
	var cms corev1.ConfigMapList
	_ = mgr.GetClient().List(context.Background(), &cms, client.InNamespace("team-a"), client.MatchingLabels{"tier": "1"})
	secrets := &metav1.PartialObjectMetadataList{}
	secrets.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("SecretList"))
	_ = mgr.GetClient().List(context.Background(), secrets, client.InNamespace("team-b"))
	fmt.Println(len(cms.Items), len(secrets.Items))
}
