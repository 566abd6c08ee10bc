// Command scalebench measures warmcache's bolt informer at a million pods
// under a memory limit, each informer in a process of its own, and prints
// each phase's time and resident memory: anonymous (RssAnon, what a memory
// limit must cover) apart from file-backed (RssFile, the cache file's
// mapped pages, which the kernel reclaims under pressure), beside the Go
// heap. See benchmarks/internal/scalebench for what each phase does.
//
// Usage:
//
//	go run ./benchmarks/cmd/scalebench [-n 1000000] [-memlimit 1GiB] [-cgroup-limit 1.5GiB] [-client-go-n 0]
//		[-mix 0 [-mix-types 50] [-mix-skew] [-mix-updates 20000] [-mix-memory SIZE] [-mix-one] [-mix-queue 0] [-mix-budget 0] [-mix-page 0]]
//		[-updates 50000] [-relist 10] [-dir DIR]
//
// The pods come from a genserver in a child process (this program started
// again), which generates each pod when it serves it; its throughput alone
// is measured first (a WatchList of every pod, read and discarded).
// -cgroup-limit puts each warmcache informer process in a memory cgroup of
// its own, created under this process's, limiting anonymous memory and
// page cache together; where none can be created the run goes on without
// and says so. -mix N runs a factory of -mix-types resource types (50 by
// default, at least 5: pods, configmaps, secrets, services and
// serviceaccounts, the rest custom resources) with N objects in all: a
// cold start and a warm start of all of them, with -mix-one the warm
// start of each resource alone, then a steady state of -mix-updates
// updates spread over them in proportion to their objects while every
// informer runs. The objects are spread evenly over the types; with
// -mix-skew the pods take a third of them and the other types share the
// rest, as in a cluster where one resource dominates. -mix-memory sets the
// factory's memory budget (factory.Options.MemoryBudget; give -memlimit
// with it, a budget is no limit on the process), -mix-budget the queue
// budget its informers share and -mix-page their list page size.
//
// The table goes to stdout, progress to stderr. Exit status: 0 on success,
// 1 if a measurement failed, 2 for bad flags.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/warmcache/warmcache/benchmarks/internal/cmdrun"
	"github.com/warmcache/warmcache/benchmarks/internal/machine"
	"github.com/warmcache/warmcache/benchmarks/internal/scalebench"
	"github.com/warmcache/warmcache/factory"
)

// parseBytes parses "1GiB", "1.5GiB", "512MiB" or a number of bytes.
func parseBytes(s string) (int64, error) {
	s = strings.TrimSpace(s)
	mult := 1.0
	for _, u := range []struct {
		suffix string
		mult   float64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if v, ok := strings.CutSuffix(s, u.suffix); ok {
			s, mult = v, u.mult
			break
		}
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f < 0 {
		return 0, fmt.Errorf("%q is no size (want for example 1.5GiB)", s)
	}
	return int64(f * mult), nil
}

func parse(args []string, stderr io.Writer) (scalebench.Options, error) {
	fs := cmdrun.FlagSet("scalebench", stderr)
	var o scalebench.Options
	var cgroupLimit, mixMemory string
	fs.IntVar(&o.N, "n", 1000000, "number of pods of the bolt informer's phases (0: none)")
	fs.IntVar(&o.ClientGoN, "client-go-n", 0, "number of pods of client-go's cold sync, steady state and relist (0: none)")
	fs.IntVar(&o.Mix, "mix", 0, "objects in all of a factory of -mix-types resource types: cold start, warm start, steady state (0: none)")
	fs.IntVar(&o.MixTypes, "mix-types", scalebench.DefaultMixTypes, "with -mix: resource types, at least 5 (5 built-ins, the rest custom resources)")
	fs.BoolVar(&o.MixSkew, "mix-skew", false, "with -mix: a third of the objects are pods, the rest spread evenly over the other types (default: all types even)")
	fs.IntVar(&o.MixUpdates, "mix-updates", 20000, "with -mix: updates of the steady state, spread over the types, at most one per object (0: none)")
	fs.StringVar(&mixMemory, "mix-memory", "", fmt.Sprintf("with -mix: the factory's memory budget (factory.Options.MemoryBudget), at least %dMiB, for example 384MiB with -memlimit 512MiB (empty: none)", factory.MinMemoryBudget>>20))
	fs.BoolVar(&o.MixOne, "mix-one", false, "with -mix: also the warm start of each resource alone")
	fs.IntVar(&o.MixQueue, "mix-queue", 0, "with -mix: queue capacity of each informer (0: the informer's default)")
	fs.IntVar(&o.MixBudget, "mix-budget", 0, "with -mix: queue budget the factory's informers share (0: the factory's default, negative: none)")
	fs.IntVar(&o.MixPage, "mix-page", 0, "with -mix: list page size of each informer (0: the reflector's default)")
	fs.StringVar(&o.MemLimit, "memlimit", "1GiB", "GOMEMLIMIT of warmcache's informer processes (empty: none)")
	fs.StringVar(&cgroupLimit, "cgroup-limit", "", "memory limit of a cgroup per warmcache informer process, for example 1.5GiB (empty: none)")
	fs.IntVar(&o.Updates, "updates", 50000, "updates of the steady state")
	fs.IntVar(&o.RelistPercent, "relist", 10, "percentage of pods changed before the 410 relist (negative: none)")
	fs.StringVar(&o.Dir, "dir", os.TempDir(), "directory for the cache files")
	fs.BoolVar(&o.SkipServerAlone, "skip-server-alone", false, "do not measure the server alone before the bolt informer")
	if err := cmdrun.Parse(fs, args); err != nil {
		return o, err
	}
	if o.N < 0 || o.ClientGoN < 0 || o.Mix < 0 || o.MixQueue < 0 || o.MixPage < 0 || o.MixUpdates < 0 || o.Updates <= 0 || o.RelistPercent > 100 {
		return o, fmt.Errorf("%w: -n, -client-go-n, -mix, -mix-queue, -mix-page and -mix-updates must not be negative, -updates positive, -relist at most 100", cmdrun.ErrUsage)
	}
	if o.MixTypes < scalebench.MinMixTypes {
		return o, fmt.Errorf("%w: -mix-types must be at least %d", cmdrun.ErrUsage, scalebench.MinMixTypes)
	}
	if o.N == 0 && o.ClientGoN == 0 && o.Mix == 0 {
		return o, fmt.Errorf("%w: nothing to measure", cmdrun.ErrUsage)
	}
	if cgroupLimit != "" {
		v, err := parseBytes(cgroupLimit)
		if err != nil {
			return o, fmt.Errorf("%w: -cgroup-limit: %w", cmdrun.ErrUsage, err)
		}
		o.CgroupLimit = v
	}
	if mixMemory != "" {
		v, err := parseBytes(mixMemory)
		if err != nil || v < factory.MinMemoryBudget {
			return o, fmt.Errorf("%w: -mix-memory: %q is no size of at least %d MiB (want for example 384MiB, or empty for none)", cmdrun.ErrUsage, mixMemory, factory.MinMemoryBudget>>20)
		}
		o.MixMemory = v
	}
	if o.MemLimit != "" {
		if _, err := parseBytes(o.MemLimit); err != nil {
			return o, fmt.Errorf("%w: -memlimit: %w", cmdrun.ErrUsage, err)
		}
	}
	return o, nil
}

func main() {
	scalebench.MaybeRun()
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	return cmdrun.Run("scalebench", args, stderr, parse, func(ctx context.Context, o scalebench.Options) error {
		o.Stderr = stderr
		return measure(ctx, o, args, stdout)
	})
}

// measure runs the phases of o in a temporary directory under o.Dir and
// writes the table to stdout, with what it could measure when a phase
// failed.
func measure(ctx context.Context, o scalebench.Options, args []string, stdout io.Writer) error {
	dir, err := os.MkdirTemp(o.Dir, "scalebench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	o.Dir = dir
	before := machine.Read()
	res, err := scalebench.Run(ctx, o)
	after := machine.Read()
	fmt.Fprintf(stdout, "scalebench: %s\n", before)
	if err == nil || len(res.Phases) > 0 {
		if werr := scalebench.WriteTable(stdout, res); werr != nil && err == nil {
			err = werr
		}
	}
	if l := machine.RunLabel(before, after); l != "" {
		fmt.Fprintln(stdout, l)
	}
	if after.HasLoad {
		fmt.Fprintf(stdout, "load average before: %.2f %.2f %.2f, after: %.2f %.2f %.2f\n", before.Load1, before.Load5, before.Load15, after.Load1, after.Load5, after.Load15)
	}
	fmt.Fprintf(stdout, "command: go run ./benchmarks/cmd/scalebench %s\n", strings.Join(args, " "))
	return err
}
