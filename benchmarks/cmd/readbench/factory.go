package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/kubernetes/fake"
	clientcorelisters "k8s.io/client-go/listers/core/v1"

	"github.com/warmcache/warmcache/benchmarks/internal/readbench"
	"github.com/warmcache/warmcache/benchmarks/internal/storebench"
	"github.com/warmcache/warmcache/factory"
	"github.com/warmcache/warmcache/informer"
	"github.com/warmcache/warmcache/informers"
	"github.com/warmcache/warmcache/store/bolt"
	boltmetrics "github.com/warmcache/warmcache/store/bolt/metrics"
)

// Factory is the implementation that reads through package informers'
// factory: the pods informer of f.Core().V1().Pods() on a bolt file, its
// store loaded as its informer writes it. Its "client-go lister" rows read
// client-go's PodLister over the informer's store (what the factory's
// Lister() returned before it selected in the store), its "warmcache
// lister" rows the factory's Lister().
const Factory = "factory"

// BoltHot and FactoryHot are storebench.Bolt and Factory with a hot tier
// large enough to hold every pod (-hot-bytes).
const (
	BoltHot    = readbench.BoltHot
	FactoryHot = "factory-hot"
)

// hotBytesPerPod is the default hot tier budget of BoltHot and FactoryHot
// per pod: above what a podgen pod costs the tier decoded (its protobuf
// envelope of about 4.6 KB times the tier's estimate of 2.25, plus the
// entry), so that the tier holds every pod.
const hotBytesPerPod = 16 << 10

// impls are the implementations readbench measures: storebench's, the
// factory's, and both with a large hot tier.
var impls = append(append([]string{}, storebench.Impls...), Factory, BoltHot, FactoryHot)

// factoryTarget is the pods informer of an informers.Factory on a new
// bolt file in dir, never started.
type factoryTarget struct {
	target  *storebench.Target
	listers readbench.Listers
	f       *informers.Factory
	dir     string
}

// openFactory opens it as impl (Factory or FactoryHot) names it, with a
// hot tier of hotBytes (nil: the store's default).
func openFactory(ctx context.Context, impl, dir string, pageSize int, hotBytes *int64, reg prometheus.Registerer) (*factoryTarget, error) {
	tmp, err := os.MkdirTemp(dir, "readbench-factory-")
	if err != nil {
		return nil, fmt.Errorf("readbench: %s: %w", impl, err)
	}
	bo := bolt.Options{PageSize: pageSize, HotBytes: hotBytes}
	if reg != nil {
		if bo.Metrics, err = boltmetrics.New(reg); err != nil {
			return nil, fmt.Errorf("readbench: %s: %w", impl, errors.Join(err, os.RemoveAll(tmp)))
		}
	}
	wf, err := factory.New(ctx, factory.Options{
		Path: filepath.Join(tmp, "cache.db"),
		Bolt: bo,
	})
	if err != nil {
		return nil, fmt.Errorf("readbench: %s: %w", impl, errors.Join(err, os.RemoveAll(tmp)))
	}
	f := informers.NewSharedInformerFactoryWithContext(ctx, wf, fake.NewClientset(), 0)
	pods := f.Core().V1().Pods()
	inf, ok := pods.Informer().(*informer.Informer)
	if !ok {
		err := fmt.Errorf("readbench: %s: the pods informer is a %T, not warmcache's (%v)", impl, pods.Informer(), f.Fallbacks())
		return nil, errors.Join(err, f.Close(), os.RemoveAll(tmp))
	}
	return &factoryTarget{
		target: storebench.Wrap(impl, inf.Store()),
		listers: readbench.Listers{
			ClientGo:  clientcorelisters.NewPodLister(inf.GetIndexer()),
			Warmcache: pods.Lister(),
		},
		f: f, dir: tmp,
	}, nil
}

// Close shuts the factory down (closing the file) and removes the file.
func (ft *factoryTarget) Close() error {
	return errors.Join(ft.target.Close(), ft.f.Close(), os.RemoveAll(ft.dir))
}
