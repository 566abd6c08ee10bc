// Command storebench measures warmcache's stores side by side with
// client-go's cache.NewIndexer on the same realistic pods and prints a table
// with each store's ratio to client-go: Go heap per pod, batched write
// throughput, GetByKey and ByIndex(namespace) latency, Replace time.
//
// Usage:
//
//	go run ./benchmarks/cmd/storebench [-n 100000] [-impl client-go,memory,bolt] [-dir DIR]
//
// Pods come from internal/podgen (about 7.7 KB of JSON each) and are
// decoded from protobuf before they are given to any store, as an
// informer's are. The bolt store's file is created in -dir (default: the
// system's temporary directory) and removed afterwards.
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
	"runtime/pprof"
	"strings"
	"time"

	"github.com/warmcache/warmcache/benchmarks/internal/cmdrun"
	"github.com/warmcache/warmcache/benchmarks/internal/machine"
	"github.com/warmcache/warmcache/benchmarks/internal/storebench"
	"github.com/warmcache/warmcache/benchmarks/internal/syncflag"
	"github.com/warmcache/warmcache/store/bolt"
)

// options holds the parsed flags.
type options struct {
	cmdrun.Bench
	batch, page  int
	sync         bolt.SyncPolicy
	updates      int
	getSamples   int
	indexSamples int
	cpuProfile   string
}

func parse(args []string, stderr io.Writer) (options, error) {
	fs := cmdrun.FlagSet("storebench", stderr)
	var o options
	var sync string
	o.Flags(fs, storebench.Impls, "implementations", "")
	fs.IntVar(&o.batch, "batch", storebench.DefaultBatchSize, "objects per write (the informer's batch)")
	fs.IntVar(&o.page, "page", storebench.DefaultPageSize, "objects per Replace page (the reflector's page size)")
	fs.StringVar(&sync, "bolt-sync", "onclose", "bolt durability policy: "+strings.Join(syncflag.Names(), ", ")+" (the first is the store's default)")
	fs.IntVar(&o.updates, "updates", 0, "number of updates measured (default min(n, 20000))")
	fs.IntVar(&o.getSamples, "get-samples", 0, "number of GetByKey lookups (default 20000)")
	fs.IntVar(&o.indexSamples, "index-samples", 0, "number of ByIndex lookups (default 50)")
	fs.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile of the whole run to this file (go tool pprof)")
	if err := cmdrun.Parse(fs, args); err != nil {
		return o, err
	}
	if o.N <= 0 || o.batch <= 0 || o.page <= 0 || o.updates < 0 || o.getSamples < 0 || o.indexSamples < 0 {
		return o, fmt.Errorf("%w: -n, -batch and -page must be positive, sample counts not negative", cmdrun.ErrUsage)
	}
	var err error
	if o.sync, err = syncflag.Parse(sync); err != nil {
		return o, fmt.Errorf("%w: -bolt-sync: %w", cmdrun.ErrUsage, err)
	}
	return o, nil
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	return cmdrun.Run("storebench", args, stderr, parse, func(ctx context.Context, o options) error {
		if o.cpuProfile == "" {
			return measureAll(ctx, o, args, stdout, stderr)
		}
		f, err := os.Create(o.cpuProfile)
		if err != nil {
			return fmt.Errorf("-cpuprofile: %w", err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			return errors.Join(fmt.Errorf("-cpuprofile: %w", err), f.Close())
		}
		err = measureAll(ctx, o, args, stdout, stderr)
		pprof.StopCPUProfile()
		if cerr := f.Close(); cerr != nil {
			err = errors.Join(err, fmt.Errorf("-cpuprofile: %w", cerr))
		}
		return err
	})
}

func measureAll(ctx context.Context, o options, args []string, stdout, stderr io.Writer) error {
	m := machine.Read()
	fmt.Fprintf(stderr, "storebench: generating %d pods...\n", o.N)
	start := time.Now()
	c, err := storebench.NewCorpus(o.N)
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "storebench: %d pods, %.0f protobuf bytes each, in %v\n", o.N, float64(c.Bytes())/float64(o.N), time.Since(start).Round(time.Millisecond))
	ro := storebench.RunOptions{
		Options:      storebench.Options{Dir: o.Dir, BoltSync: o.sync, BatchSize: o.batch, PageSize: o.page},
		Updates:      o.updates,
		GetSamples:   o.getSamples,
		IndexSamples: o.indexSamples,
	}
	var results []storebench.Result
	for _, impl := range o.Impls {
		if err := ctx.Err(); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "storebench: measuring %s...\n", impl)
		start := time.Now()
		r, err := storebench.Measure(ctx, impl, c, o.N, ro)
		if err != nil {
			return err
		}
		fmt.Fprintf(stderr, "storebench: %s done in %v\n", impl, time.Since(start).Round(time.Millisecond))
		results = append(results, r)
		// Hand the memory of the implementation just measured back to the
		// OS now: otherwise the runtime scavenges it in the background
		// while the next one runs (after client-go's 1.5 GB, bolt's adds
		// cost 37-44 µs CPU per pod instead of 29-33).
		debug.FreeOSMemory()
	}
	after := machine.Read()
	title := fmt.Sprintf("warmcache stores vs client-go cache.NewIndexer: %d podgen pods decoded from protobuf, batches of %d, Replace pages of %d, bolt %v\n%s",
		o.N, o.batch, o.page, o.sync, m)
	t := storebench.Table(title, results)
	if l := machine.RunLabel(m, after); l != "" {
		t.Note("%s", l)
	}
	if after.HasLoad {
		t.Note("load average after the run: %.2f %.2f %.2f (this run included)", after.Load1, after.Load5, after.Load15)
	}
	t.Note("latencies: %d GetByKey and %d ByIndex lookups of random keys and namespaces; writes and Replace time only the store calls",
		results[0].Get.Len(), results[0].ByIndex.Len())
	t.Note("CPU: the process's user+system time during the writes, garbage collection included: what the writes cost, however busy the machine")
	t.Note("command: go run ./benchmarks/cmd/storebench %s", strings.Join(args, " "))
	return t.Write(stdout)
}
