package scalebench

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/warmcache/warmcache/benchmarks/internal/genserver"
	"github.com/warmcache/warmcache/benchmarks/internal/informerbench"
	"github.com/warmcache/warmcache/benchmarks/internal/procmem"
	"github.com/warmcache/warmcache/factory"
	"github.com/warmcache/warmcache/informer"
	"github.com/warmcache/warmcache/reflector"
	"github.com/warmcache/warmcache/store/bolt"
)

// factoryFile is the name of the factory's file in the child's directory.
const factoryFile = "factory.db"

// factoryChild measures a factory of the MixResources (spec.N objects in
// all), each informer with a counting handler, on one file: a cold start
// (file removed first), a warm start, or the warm start of one resource
// alone (spec.Resource), each until every informer has synced and its
// handler has been told of every object.
func factoryChild(ctx context.Context, spec childSpec, rss *procmem.Sampler, emit func(Phase) error) error {
	path := filepath.Join(spec.Dir, factoryFile)
	if spec.Mode == modeFactoryCold {
		if err := bolt.Remove(path); err != nil {
			return err
		}
	}
	resources := MixResources(spec.N)
	name := ""
	if spec.Mode == modeFactoryWarmOne {
		if spec.Resource < 0 || spec.Resource >= len(resources) {
			return fmt.Errorf("no resource %d", spec.Resource)
		}
		resources = resources[spec.Resource : spec.Resource+1]
		name = resources[0].GVR.Resource
	}
	m := startMeter(rss)
	f, err := factory.New(ctx, factory.Options{
		Path: path, RESTConfig: genserver.Config(spec.URL), ClusterID: "scalebench",
		Informer: informer.Options{
			QueueCapacity: spec.QueueCapacity,
			Reflector:     reflector.Options{ListPageSize: int64(spec.PageSize)},
		},
		QueueBudget: spec.QueueBudget,
	})
	if err != nil {
		return err
	}
	type counted struct {
		c *informerbench.Counter
		n int
	}
	var counters []counted
	total := 0
	for _, r := range resources {
		var inf *informer.Informer
		var err error
		if r.GVR.Group == CRDGroup {
			inf, err = f.ForDynamic(ctx, r.GVR, factory.Scope{})
		} else {
			inf, err = f.ForResource(ctx, r.GVR, r.Kind, factory.Scope{})
		}
		if err != nil {
			return errors.Join(err, f.Shutdown())
		}
		c := &informerbench.Counter{}
		if _, err := inf.AddEventHandler(c); err != nil {
			return errors.Join(err, f.Shutdown())
		}
		counters = append(counters, counted{c, r.Count})
		total += r.Count
	}
	f.Start(ctx)
	for n, ok := range f.WaitForCacheSync(ctx) {
		if !ok {
			return errors.Join(fmt.Errorf("informer %s did not sync: %w", n, ctx.Err()), f.Shutdown())
		}
	}
	for _, c := range counters {
		if err := c.c.WaitAdds(ctx, c.n); err != nil {
			return errors.Join(err, f.Shutdown())
		}
	}
	p := m.stop(spec.Mode, "factory", total, total)
	p.Resource = name
	return errors.Join(emit(p), f.Shutdown())
}
