// Command readbench measures the read path of warmcache's stores side by
// side with client-go's cache.NewIndexer, each loaded with the same
// realistic pods and a namespace index: typed lister lists of every pod,
// of a cluster-wide label selector, of a namespace and of a selector in a
// namespace, through client-go's listers and through warmcache's
// (package listers), then GetByKey over uniform and Zipf-skewed keys. The
// factory column reads through package informers' factory: the pods
// informer of f.Core().V1().Pods() on a bolt file, its client-go lister
// rows through client-go's PodLister over the informer's store (the
// factory's Lister() before it selected in the store), its warmcache
// lister rows through f.Core().V1().Pods().Lister(). The bolt-hot and
// factory-hot columns are bolt and factory with a hot tier large enough
// to hold every pod (-hot-bytes; by default 16 KiB per pod, above a
// podgen pod's decoded size), what a user who has the memory configures.
// For each read it prints the median time, the transient heap (peak above
// the settled heap, result live) and the bytes allocated.
//
// Usage:
//
//	go run ./benchmarks/cmd/readbench [-n 100000] [-impl client-go,memory,bolt,factory,bolt-hot,factory-hot] [-hot-bytes N] [-dir DIR] [-reps 3] [-gets 20000] [-reconciles 2000]
//
// The table goes to stdout, progress to stderr. Exit status: 0 on success,
// 1 if a measurement failed, 2 for bad flags.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/warmcache/warmcache/benchmarks/internal/cmdrun"
	"github.com/warmcache/warmcache/benchmarks/internal/machine"
	"github.com/warmcache/warmcache/benchmarks/internal/readbench"
	"github.com/warmcache/warmcache/benchmarks/internal/storebench"
	"github.com/warmcache/warmcache/benchmarks/internal/syncflag"
)

type options struct {
	cmdrun.Bench
	reps int
	gets int
	recs int
	// pageSize is the bolt store's page size (0: the store's default).
	pageSize int
	// hotBytes is the hot tier's budget of the -hot implementations.
	hotBytes int64
}

func parse(args []string, stderr io.Writer) (options, error) {
	fs := cmdrun.FlagSet("readbench", stderr)
	var o options
	o.Flags(fs, impls, "stores", Factory+": the listers of package informers' factory on a bolt file")
	fs.IntVar(&o.reps, "reps", 3, "repetitions of each list (the median is reported)")
	fs.IntVar(&o.gets, "gets", 20000, "GetByKey lookups of each key distribution")
	fs.IntVar(&o.recs, "reconciles", 2000, "iterations of the reconcile loop")
	fs.IntVar(&o.pageSize, "bolt-page-size", 0, "page size of the bolt store's file in bytes, a power of two (0: the store's default)")
	fs.Int64Var(&o.hotBytes, "hot-bytes", 0, "hot tier budget in bytes of "+BoltHot+" and "+FactoryHot+" (0: 16 KiB per pod, enough to hold every pod decoded)")
	if err := cmdrun.Parse(fs, args); err != nil {
		return o, err
	}
	if o.N <= 0 || o.reps <= 0 || o.gets <= 0 || o.recs <= 0 || o.hotBytes < 0 {
		return o, fmt.Errorf("%w: -n, -reps, -gets and -reconciles must be positive, -hot-bytes not negative", cmdrun.ErrUsage)
	}
	if o.hotBytes == 0 {
		o.hotBytes = int64(o.N) * hotBytesPerPod
	}
	if err := syncflag.CheckPageSize(o.pageSize); err != nil {
		return o, err
	}
	return o, nil
}

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int {
	return cmdrun.Run("readbench", args, stderr, parse, func(ctx context.Context, o options) error {
		return measureAll(ctx, o, args, stdout, stderr)
	})
}

func measureAll(ctx context.Context, o options, args []string, stdout, stderr io.Writer) error {
	m := machine.Read()
	fmt.Fprintf(stderr, "readbench: generating %d pods...\n", o.N)
	c, err := storebench.NewCorpus(o.N)
	if err != nil {
		return err
	}
	var results []readbench.Result
	for _, impl := range o.Impls {
		r, err := measureOne(ctx, impl, c, o, stderr)
		if err != nil {
			return err
		}
		results = append(results, r)
		debug.FreeOSMemory()
	}
	after := machine.Read()
	pageSize := "default page size"
	if o.pageSize != 0 {
		pageSize = fmt.Sprintf("page size %d", o.pageSize)
	}
	t := readbench.Table(fmt.Sprintf("reads of %d podgen pods, namespace index on every store, bolt's %s\n%s", o.N, pageSize, m), results)
	if l := machine.RunLabel(m, after); l != "" {
		t.Note("%s", l)
	}
	t.Note("[n] after a read: the objects it returned; ms and alloc: median of %d runs; heap: the largest peak above the settled heap", o.reps)
	if slices.Contains(o.Impls, Factory) || slices.Contains(o.Impls, FactoryHot) {
		t.Note("%s: the pods informer of package informers' factory on a bolt file; its client-go lister rows are client-go's PodLister over the informer's store (the factory's Lister() before it selected in the store), its warmcache lister rows f.Core().V1().Pods().Lister()", Factory)
	}
	if slices.Contains(o.Impls, BoltHot) || slices.Contains(o.Impls, FactoryHot) {
		t.Note("%s, %s: %s and %s with a hot tier of %d MiB, enough to hold every pod decoded", BoltHot, FactoryHot, storebench.Bolt, Factory, o.hotBytes>>20)
	}
	t.Note("command: go run ./benchmarks/cmd/readbench %s", strings.Join(args, " "))
	return t.Write(stdout)
}

func measureOne(ctx context.Context, impl string, c *storebench.Corpus, o options, stderr io.Writer) (r readbench.Result, err error) {
	fmt.Fprintf(stderr, "readbench: loading %s...\n", impl)
	reg := prometheus.NewRegistry()
	ro := readbench.Options{Reps: o.reps, GetSamples: o.gets, Reconciles: o.recs, Gatherer: reg}
	var t *storebench.Target
	var hotBytes *int64 // nil: the store's default
	if impl == BoltHot || impl == FactoryHot {
		hotBytes = &o.hotBytes
	}
	switch impl {
	case Factory, FactoryHot:
		ft, err := openFactory(ctx, impl, o.Dir, o.pageSize, hotBytes, reg)
		if err != nil {
			return r, err
		}
		defer func() { err = errors.Join(err, ft.Close()) }()
		t, ro.Listers = ft.target, &ft.listers
	default:
		base := impl
		if impl == BoltHot {
			base = storebench.Bolt
		}
		t, err = storebench.Open(ctx, base, storebench.Options{Dir: o.Dir, Registerer: reg, BoltPageSize: o.pageSize, BoltHotBytes: hotBytes})
		if err != nil {
			return r, err
		}
		t.Name = impl
		defer func() { err = errors.Join(err, t.Close()) }()
	}
	if err := storebench.Load(ctx, t, c, o.N, nopTimer{}); err != nil {
		return r, err
	}
	fmt.Fprintf(stderr, "readbench: measuring %s...\n", impl)
	start := time.Now()
	r, err = readbench.Measure(ctx, t, c, o.N, ro)
	if err != nil {
		return r, err
	}
	fmt.Fprintf(stderr, "readbench: %s done in %v\n", impl, time.Since(start).Round(time.Millisecond))
	return r, nil
}

type nopTimer struct{}

func (nopTimer) StartTimer() {}
func (nopTimer) StopTimer()  {}
