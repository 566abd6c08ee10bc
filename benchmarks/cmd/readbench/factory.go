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

// impls are the implementations readbench measures: storebench's and the
// factory's.
var impls = append(append([]string{}, storebench.Impls...), Factory)

// factoryTarget is the pods informer of an informers.Factory on a new
// bolt file in dir, never started.
type factoryTarget struct {
	target  *storebench.Target
	listers readbench.Listers
	f       *informers.Factory
	dir     string
}

func openFactory(ctx context.Context, dir string, pageSize int, reg prometheus.Registerer) (*factoryTarget, error) {
	tmp, err := os.MkdirTemp(dir, "readbench-factory-")
	if err != nil {
		return nil, fmt.Errorf("readbench: %s: %w", Factory, err)
	}
	bo := bolt.Options{PageSize: pageSize}
	if reg != nil {
		if bo.Metrics, err = boltmetrics.New(reg); err != nil {
			return nil, fmt.Errorf("readbench: %s: %w", Factory, errors.Join(err, os.RemoveAll(tmp)))
		}
	}
	wf, err := factory.New(ctx, factory.Options{
		Path: filepath.Join(tmp, "cache.db"),
		Bolt: bo,
	})
	if err != nil {
		return nil, fmt.Errorf("readbench: %s: %w", Factory, errors.Join(err, os.RemoveAll(tmp)))
	}
	f := informers.NewSharedInformerFactoryWithContext(ctx, wf, fake.NewClientset(), 0)
	pods := f.Core().V1().Pods()
	inf, ok := pods.Informer().(*informer.Informer)
	if !ok {
		err := fmt.Errorf("readbench: %s: the pods informer is a %T, not warmcache's (%v)", Factory, pods.Informer(), f.Fallbacks())
		return nil, errors.Join(err, f.Close(), os.RemoveAll(tmp))
	}
	return &factoryTarget{
		target: storebench.Wrap(Factory, inf.Store()),
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
