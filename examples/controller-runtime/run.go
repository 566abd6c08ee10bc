package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"
	"sync/atomic"

	"github.com/warmcache/warmcache/crcache"
	"github.com/warmcache/warmcache/factory"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlconfig "sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

const (
	// selectLabel selects the ConfigMaps the controller reconciles.
	selectLabel = "warmcache-example"
	// hashAnnotation records the hash of a ConfigMap's data.
	hashAnnotation = "warmcache.example/data-hash"
)

// config configures run.
type config struct {
	rest      *rest.Config // required
	cacheFile string       // required: the informers' bbolt file
	namespace string       // "": all namespaces
	// skipNameValidation lets one process run the manager more than once
	// (tests): controller-runtime refuses a controller name it has seen.
	skipNameValidation bool
}

// result is what one run did.
type result struct {
	// reconciles counts Reconcile calls, patched the ConfigMaps annotated.
	reconciles, patched atomic.Int64
	// listed is how many selected ConfigMaps the manager's client listed
	// from the cache once it had synced (InNamespace and MatchingLabels,
	// pushed down to the file by crcache: only those are decoded); -1 on
	// an error.
	listed atomic.Int64
}

// run runs a manager whose cache (crcache) keeps its informers in
// cfg.cacheFile, with the ConfigMap controller, until ctx is done; the
// cache closes the file when the manager stops.
func run(ctx context.Context, cfg config) (*result, error) {
	return runWith(ctx, cfg, nil)
}

// runWith is run that calls onSynced, if not nil, once the manager's cache
// has synced.
func runWith(ctx context.Context, cfg config, onSynced func(*result)) (*result, error) {
	if cfg.rest == nil || cfg.cacheFile == "" {
		return nil, errors.New("controller-runtime example: a REST config and a cache file are required")
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, err
	}

	// The cache's options say what each informer lists; crcache keeps
	// each informer in the file under that scope, and closes the file
	// once the manager has stopped.
	cacheOpts := cache.Options{
		ByObject: map[client.Object]cache.ByObject{
			&corev1.ConfigMap{}: {Label: labels.SelectorFromSet(labels.Set{selectLabel: "true"})},
		},
	}
	if cfg.namespace != "" {
		cacheOpts.DefaultNamespaces = map[string]cache.Config{cfg.namespace: {}}
	}
	mgr, err := ctrl.NewManager(cfg.rest, ctrl.Options{
		Scheme:     scheme,
		Cache:      cacheOpts,
		NewCache:   crcache.NewCache(crcache.Options{Factory: factory.Options{Path: cfg.cacheFile}}),
		Metrics:    metricsserver.Options{BindAddress: "0"},
		Controller: ctrlconfig.Controller{SkipNameValidation: ptr.To(cfg.skipNameValidation)},
	})
	if err != nil {
		return nil, fmt.Errorf("controller-runtime example: new manager: %w", err)
	}
	res := &result{}
	r := &reconciler{client: mgr.GetClient(), result: res}
	if err := ctrl.NewControllerManagedBy(mgr).For(&corev1.ConfigMap{}).Complete(r); err != nil {
		return nil, fmt.Errorf("controller-runtime example: new controller: %w", err)
	}
	if onSynced != nil {
		list := func(ctx context.Context) {
			var cms corev1.ConfigMapList
			err := mgr.GetClient().List(ctx, &cms, client.InNamespace(cfg.namespace), client.MatchingLabels{selectLabel: "true"})
			if err != nil {
				res.listed.Store(-1)
				return
			}
			res.listed.Store(int64(len(cms.Items)))
		}
		if err := mgr.Add(synced{mgr: mgr, fn: func(ctx context.Context) { list(ctx); onSynced(res) }}); err != nil {
			return nil, err
		}
	}
	if err := mgr.Start(ctx); err != nil {
		return res, fmt.Errorf("controller-runtime example: manager: %w", err)
	}
	return res, nil
}

// synced is a runnable that calls fn once the manager's cache has synced.
type synced struct {
	mgr ctrl.Manager
	fn  func(context.Context)
}

func (s synced) Start(ctx context.Context) error {
	if s.mgr.GetCache().WaitForCacheSync(ctx) {
		s.fn(ctx)
	}
	return nil
}

// reconciler annotates each selected ConfigMap with a hash of its data,
// reading it from the cache (the warmcache informer's store).
type reconciler struct {
	client client.Client
	result *result
}

func (r *reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	r.result.reconciles.Add(1)
	var cm corev1.ConfigMap
	if err := r.client.Get(ctx, req.NamespacedName, &cm); err != nil {
		if apierrors.IsNotFound(err) {
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, err
	}
	want := dataHash(cm.Data)
	if cm.Annotations[hashAnnotation] == want {
		return ctrl.Result{}, nil
	}
	patch := client.MergeFrom(cm.DeepCopy())
	if cm.Annotations == nil {
		cm.Annotations = map[string]string{}
	}
	cm.Annotations[hashAnnotation] = want
	if err := r.client.Patch(ctx, &cm, patch); err != nil {
		return ctrl.Result{}, err
	}
	r.result.patched.Add(1)
	return ctrl.Result{}, nil
}

// dataHash is a stable hash of a ConfigMap's data.
func dataHash(data map[string]string) string {
	keys := make([]string, 0, len(data))
	for k := range data {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	h := sha256.New()
	for _, k := range keys {
		fmt.Fprintf(h, "%d:%s=%d:%s;", len(k), k, len(data[k]), data[k])
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}
