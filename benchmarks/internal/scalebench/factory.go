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

// counted is the counting handler of one of the factory's informers and
// its resource.
type counted struct {
	c   *informerbench.Counter
	res genserver.Resource
}

// factoryChild measures a factory of spec.Mix's resources (spec.N objects
// in all), each informer with a counting handler, on one file: a cold
// start (file removed first), a warm start, the warm start of one
// resource alone (spec.Resource), or, after a warm start it does not
// measure, a steady state of spec.Updates updates with every informer
// running. A start ends when every informer has synced and its handler
// has been told of every object.
func factoryChild(ctx context.Context, spec childSpec, rss *procmem.Sampler, emit func(Phase) error) error {
	path := filepath.Join(spec.Dir, factoryFile)
	if spec.Mode == modeFactoryCold {
		if err := bolt.Remove(path); err != nil {
			return err
		}
	}
	if err := spec.Mix.Validate(); err != nil {
		return err
	}
	resources := spec.Mix.Resources()
	name := ""
	if spec.Mode == modeFactoryWarmOne {
		if spec.Resource < 0 || spec.Resource >= len(resources) {
			return fmt.Errorf("no resource %d", spec.Resource)
		}
		resources = resources[spec.Resource : spec.Resource+1]
		name = resources[0].GVR.Resource
	}
	m := startMeter(rss)
	opts := factory.Options{
		Path: path, RESTConfig: genserver.Config(spec.URL), ClusterID: "scalebench",
		Informer: informer.Options{
			QueueCapacity: spec.QueueCapacity,
			Reflector:     reflector.Options{ListPageSize: int64(spec.PageSize)},
		},
		QueueBudget:  spec.QueueBudget,
		MemoryBudget: spec.MemoryBudget,
	}
	f, err := factory.New(ctx, opts)
	if err != nil {
		return err
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
		counters = append(counters, counted{c, r})
		total += r.Count
	}
	f.Start(ctx)
	synced := 0
	for n, ok := range f.WaitForCacheSync(ctx) {
		if !ok {
			return errors.Join(fmt.Errorf("informer %s did not sync: %w", n, ctx.Err()), f.Shutdown())
		}
		synced++
	}
	for _, c := range counters {
		if err := c.c.WaitAdds(ctx, c.res.Count); err != nil {
			return errors.Join(err, f.Shutdown())
		}
	}
	// A handler told of more objects than its resource has would be
	// counting another resource's, or some twice.
	for _, c := range counters {
		if adds, _, _ := c.c.Counts(); adds != c.res.Count {
			return errors.Join(fmt.Errorf("the handler of %s was told of %d objects, want %d", c.res.GVR.Resource, adds, c.res.Count), f.Shutdown())
		}
	}
	p := m.stop(spec.Mode, "factory", total, total)
	if spec.Mode == modeFactorySteady {
		if p, err = factorySteady(ctx, spec, counters, rss); err != nil {
			return errors.Join(err, f.Shutdown())
		}
	}
	p.Resource, p.Informers, p.MemoryBudget = name, synced, spec.MemoryBudget
	if g := f.ListGate(); g != nil {
		p.ListSlots = g.Slots()
	}
	if b := f.QueueBudget(); b != nil {
		p.QueueBudget = b.Limit()
	}
	return errors.Join(emit(p), f.Shutdown())
}

// factorySteady changes spec.Updates objects while the watch streams are
// held back, spread over the resources in proportion to their objects
// (each object at most once when there are no more updates than objects),
// releases them at once and waits until every informer's handler has been
// told of its updates.
func factorySteady(ctx context.Context, spec childSpec, counters []counted, rss *procmem.Sampler) (Phase, error) {
	ctl := &genserver.Client{URL: spec.URL}
	weights := make([]int, len(counters))
	seen := make([]int, len(counters))
	total := 0
	for k, c := range counters {
		weights[k] = c.res.Count
		_, seen[k], _ = c.c.Counts()
		total += c.res.Count
	}
	updates := share(spec.Updates, weights)
	m := startMeter(rss)
	for k, c := range counters {
		if updates[k] == 0 {
			continue
		}
		if _, err := ctl.Churn(ctx, c.res.GVR.Resource, updates[k], spec.Gen, 0); err != nil {
			return Phase{}, errors.Join(err, ctl.Open(ctx))
		}
	}
	if err := ctl.Open(ctx); err != nil {
		return Phase{}, err
	}
	for k, c := range counters {
		if err := c.c.WaitUpdates(ctx, seen[k]+updates[k]); err != nil {
			return Phase{}, fmt.Errorf("%s: %d updates: %w", c.res.GVR.Resource, updates[k], err)
		}
	}
	return m.stop(modeFactorySteady, "factory", total, spec.Updates), nil
}
