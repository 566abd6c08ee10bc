// Package scalebench measures warmcache's bolt informer at a million pods
// under a memory limit, and a factory of many resource types in one file.
//
// Every informer runs in a process of its own, so that the anonymous
// resident memory read from /proc (RssAnon: the Go heap, stacks and
// runtime, what a memory limit must cover) is the informer's alone; the
// file-backed resident memory (RssFile: the bbolt file's mapped pages,
// page cache the kernel reclaims under pressure) is reported apart. The
// objects come from a genserver (benchmarks/internal/genserver) in another
// child process, which generates them when it serves them and so holds a
// few bytes per object. Each informer process can be given a Go memory
// limit (GOMEMLIMIT) and be put in a memory cgroup of its own that limits
// anonymous memory and page cache together.
//
// The phases, each measured from its start to the handler having been told
// of everything: cold sync (empty file), steady state (updates delivered
// through the watch, then the settled heap), a 410 relist with a
// percentage of the pods changed (in the cold process), and warm restarts
// with every stored pod replayed to a handler and without a handler (new
// processes on the file the first left). For the factory: a cold start of
// all of a Mix's resources together (DefaultMixTypes of them unless
// Options.MixTypes says otherwise), a warm start of all together, a warm
// start of each resource alone, and a steady state of updates spread over
// them while every informer runs (in a process that warm starts first).
package scalebench

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/warmcache/warmcache/benchmarks/internal/apiproc"
	"github.com/warmcache/warmcache/benchmarks/internal/cmdrun"
	"github.com/warmcache/warmcache/benchmarks/internal/informerbench"
	"github.com/warmcache/warmcache/benchmarks/internal/procmem"
	"github.com/warmcache/warmcache/factory"
)

// Options configures Run.
type Options struct {
	// N is the number of pods of the bolt informer's phases; 0 skips
	// them.
	N int
	// ClientGoN is the number of pods of client-go's phases (cold sync,
	// steady state, relist); 0 skips them.
	ClientGoN int
	// Mix is the number of objects in all of the factory's phases over
	// MixTypes resources; 0 skips them. MixOne adds the warm start of each
	// resource alone.
	Mix    int
	MixOne bool
	// MixTypes is the number of the factory's resource types (Mix.Types):
	// the MinMixTypes built-ins, custom resources for the rest; 0 for
	// DefaultMixTypes, at least MinMixTypes otherwise. MixSkew gives the
	// pods a third of the objects (Mix.Skew); without it the types share
	// them evenly.
	MixTypes int
	MixSkew  bool
	// MixUpdates is the number of updates of the factory's steady state,
	// its last phase: spread over the resources in proportion to their
	// objects, each object changed at most once (more than Mix are cut to
	// Mix); 0 for no steady state.
	MixUpdates int
	// MixMemory is the factory's memory budget in bytes
	// (factory.Options.MemoryBudget), at least factory.MinMemoryBudget; 0
	// for none. Set MemLimit with it: a budget is no limit on the process.
	MixMemory int64
	// MixQueue is the queue capacity of each of the factory's informers
	// (informer.Options.QueueCapacity); 0 for the default. Each informer's
	// queue holds up to that many decoded objects during a list, so the
	// factory's heap during a cold start grows with MixTypes times it.
	MixQueue int
	// MixBudget is the factory's queue budget (factory.Options.QueueBudget):
	// the objects all of its informers' queues hold together; 0 for
	// factory.DefaultQueueBudget, negative for none (each queue bounded by
	// its capacity alone).
	MixBudget int
	// MixPage is the page size of the factory's informers' lists
	// (reflector.Options.ListPageSize); 0 for the reflector's default. Each
	// informer holds a page or two of decoded objects while it lists,
	// whatever the budget.
	MixPage int
	// Dir holds the cache files. Required.
	Dir string
	// MemLimit is the GOMEMLIMIT of warmcache's informer processes, for
	// example "1GiB"; "" for none. client-go's process runs without one.
	MemLimit string
	// CgroupLimit, when positive, puts every warmcache informer process in
	// a memory cgroup of its own limited to that many bytes.
	CgroupLimit int64
	// Updates is the number of updates of the steady state. Default
	// 50000.
	Updates int
	// RelistPercent is the percentage of pods changed before the 410
	// relist; negative skips the relist. Default (0 is a valid
	// percentage): set it.
	RelistPercent int
	// SkipServerAlone skips the measurement of the server alone before
	// bolt's phases.
	SkipServerAlone bool
	// Stderr receives progress and the children's standard error; Run
	// serialises its writes. Default os.Stderr.
	Stderr io.Writer
}

// ServerAlone is what the server costs without an informer: a WatchList of
// every pod read and discarded.
type ServerAlone struct {
	N       int
	Seconds float64
	Bytes   int64
	// StartSeconds is the time from starting the server process to its
	// serving.
	StartSeconds float64
	// CPUSeconds is the server process's CPU time during the stream.
	CPUSeconds float64
	// Anon is the server process's anonymous resident memory after the
	// stream.
	Anon uint64
}

// Result is what Run measured.
type Result struct {
	Phases []Phase
	Server *ServerAlone
	// CgroupError says why no cgroup could be used, when one was asked
	// for.
	CgroupError string
}

// Run runs the phases opts asks for, in order: the server alone, bolt's
// phases, client-go's, the factory's.
func Run(ctx context.Context, opts Options) (Result, error) {
	var res Result
	if opts.Dir == "" {
		return res, fmt.Errorf("scalebench: Options.Dir is required")
	}
	if opts.Stderr == nil {
		opts.Stderr = os.Stderr
	}
	// The children's standard error is copied to Stderr concurrently.
	opts.Stderr = cmdrun.LockedWriter(opts.Stderr)
	if opts.Updates <= 0 {
		opts.Updates = 50000
	}
	if opts.Mix > 0 {
		if err := opts.mix().Validate(); err != nil {
			return res, err
		}
		if opts.MixUpdates < 0 || opts.MixMemory < 0 || (opts.MixMemory > 0 && opts.MixMemory < factory.MinMemoryBudget) {
			return res, fmt.Errorf("scalebench: %d updates or a memory budget of %d bytes for the mix (want updates not negative, a budget of 0 or at least %d)",
				opts.MixUpdates, opts.MixMemory, factory.MinMemoryBudget)
		}
		opts.MixUpdates = min(opts.MixUpdates, opts.Mix)
	}
	r := &runner{opts: opts, res: &res}
	if opts.N > 0 {
		if err := r.bolt(ctx); err != nil {
			return res, err
		}
	}
	if opts.ClientGoN > 0 {
		if err := r.clientGo(ctx); err != nil {
			return res, err
		}
	}
	if opts.Mix > 0 {
		if err := r.mix(ctx); err != nil {
			return res, err
		}
	}
	return res, nil
}

// mix returns the Mix of o.
func (o Options) mix() Mix { return Mix{Objects: o.Mix, Types: o.MixTypes, Skew: o.MixSkew} }

type runner struct {
	opts    Options
	res     *Result
	cgroups int
}

func (r *runner) logf(format string, args ...interface{}) {
	fmt.Fprintf(r.opts.Stderr, "scalebench: "+format+"\n", args...)
}

// informer runs one informer child, in a cgroup of its own when asked
// for, and appends its phases.
func (r *runner) informer(ctx context.Context, spec childSpec) error {
	var env []string
	limited := spec.Impl != informerbench.ClientGo
	if limited && r.opts.MemLimit != "" {
		env = append(env, "GOMEMLIMIT="+r.opts.MemLimit)
	} else {
		env = append(env, "GOMEMLIMIT=off")
	}
	var cg *cgroup
	if limited && r.opts.CgroupLimit > 0 && r.res.CgroupError == "" {
		r.cgroups++
		c, err := newCgroup(fmt.Sprintf("scalebench-%d-%d", os.Getpid(), r.cgroups), r.opts.CgroupLimit)
		if err != nil {
			r.res.CgroupError = err.Error()
			r.logf("no cgroup: %v", err)
		} else {
			cg, spec.Cgroup = c, c.dir
		}
	}
	start := time.Now()
	name := spec.Mode
	if spec.Mode == modeFactoryWarmOne {
		name += " " + strconv.Itoa(spec.Resource)
	}
	r.logf("%s %s, %d objects...", spec.Impl, name, spec.N)
	phases, err := runInformer(ctx, spec, env, r.opts.Stderr)
	if cg != nil {
		peak, ooms := cg.usage()
		for i := range phases {
			phases[i].CgroupPeak, phases[i].CgroupOOM = peak, ooms
		}
		if rerr := cg.remove(); rerr != nil {
			r.logf("remove cgroup %s: %v", cg.dir, rerr)
		}
		if err != nil && ooms > 0 {
			err = fmt.Errorf("%w (%d OOM kills in its cgroup)", err, ooms)
		}
	}
	for _, p := range phases {
		r.logf("  %s: %.2f s, peak anon %.0f MiB, peak file %.0f MiB, peak heap %.0f MiB", p.Name, p.Seconds, mib(p.AnonPeak), mib(p.FilePeak), mib(p.HeapPeak))
	}
	r.logf("%s %s done in %v", spec.Impl, name, time.Since(start).Round(time.Millisecond))
	r.res.Phases = append(r.res.Phases, phases...)
	return err
}

func mib(b uint64) float64 { return float64(b) / (1 << 20) }

func (r *runner) server(ctx context.Context, spec childSpec) (*apiproc.Process, float64, error) {
	start := time.Now()
	s, err := startServer(ctx, spec, r.opts.Stderr)
	if err != nil {
		return nil, 0, err
	}
	secs := time.Since(start).Seconds()
	r.logf("server at %s ready in %.1f s", s.URL, secs)
	return s, secs, nil
}

func (r *runner) bolt(ctx context.Context) error {
	n := r.opts.N
	s, startSecs, err := r.server(ctx, childSpec{Pods: n})
	if err != nil {
		return err
	}
	defer s.Close()
	if !r.opts.SkipServerAlone {
		if err := r.serverAlone(ctx, s, startSecs, n); err != nil {
			return err
		}
	}
	dir := filepath.Join(r.opts.Dir, "bolt")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	base := childSpec{URL: s.URL, Impl: informerbench.Bolt, Dir: dir, N: n}
	cold := base
	cold.Mode, cold.Updates, cold.RelistPercent, cold.Gen = modeCold, r.opts.Updates, r.opts.RelistPercent, 1
	if err := r.informer(ctx, cold); err != nil {
		return err
	}
	for _, mode := range []string{modeWarmReplay, modeWarmNoHandler} {
		w := base
		w.Mode = mode
		if err := r.informer(ctx, w); err != nil {
			return err
		}
	}
	return nil
}

func (r *runner) clientGo(ctx context.Context) error {
	n := r.opts.ClientGoN
	s, _, err := r.server(ctx, childSpec{Pods: n})
	if err != nil {
		return err
	}
	defer s.Close()
	spec := childSpec{URL: s.URL, Impl: informerbench.ClientGo, Mode: modeCold, N: n, Updates: min(r.opts.Updates, n), RelistPercent: r.opts.RelistPercent, Gen: 11}
	return r.informer(ctx, spec)
}

func (r *runner) mix(ctx context.Context) error {
	mix := r.opts.mix()
	s, _, err := r.server(ctx, childSpec{Mix: mix})
	if err != nil {
		return err
	}
	defer s.Close()
	dir := filepath.Join(r.opts.Dir, "factory")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	base := childSpec{URL: s.URL, Impl: "factory", Dir: dir, N: r.opts.Mix, Mix: mix,
		QueueCapacity: r.opts.MixQueue, QueueBudget: r.opts.MixBudget, PageSize: r.opts.MixPage, MemoryBudget: r.opts.MixMemory}
	for _, mode := range []string{modeFactoryCold, modeFactoryWarm} {
		spec := base
		spec.Mode = mode
		if err := r.informer(ctx, spec); err != nil {
			return err
		}
	}
	if r.opts.MixOne {
		for k := range len(mix.Counts()) {
			spec := base
			spec.Mode, spec.Resource = modeFactoryWarmOne, k
			if err := r.informer(ctx, spec); err != nil {
				return err
			}
		}
	}
	// The steady state comes last: after it every resource's file is
	// behind the server's resourceVersion (the other resources changed),
	// and a warm start would first wait for its watch to catch up.
	if r.opts.MixUpdates > 0 {
		spec := base
		spec.Mode, spec.Updates, spec.Gen = modeFactorySteady, r.opts.MixUpdates, 1
		if err := r.informer(ctx, spec); err != nil {
			return err
		}
	}
	return nil
}

// streamAlone reads a WatchList of the server's n pods in protobuf up to
// its closing bookmark and discards it: what serving the pods costs
// without an informer taking them.
func streamAlone(ctx context.Context, url string, n int) (ServerAlone, error) {
	a := ServerAlone{N: n}
	st, err := apiproc.ReadStream(ctx, nil, url, apiproc.WatchListQuery, "application/vnd.kubernetes.protobuf", n+1)
	if err != nil {
		return a, fmt.Errorf("scalebench: server alone: %w", err)
	}
	a.Seconds, a.Bytes = st.Elapsed.Seconds(), st.Bytes
	return a, nil
}

// serverAlone measures the server s of n pods without an informer.
func (r *runner) serverAlone(ctx context.Context, s *apiproc.Process, startSecs float64, n int) error {
	pid := s.Pid()
	cpu0, _ := procmem.CPU(pid)
	alone, err := streamAlone(ctx, s.URL, n)
	if err != nil {
		return err
	}
	if cpu1, err := procmem.CPU(pid); err == nil {
		alone.CPUSeconds = (cpu1 - cpu0).Seconds()
	}
	alone.StartSeconds = startSecs
	if u, err := procmem.Read(pid); err == nil {
		alone.Anon = u.Anon
	}
	r.res.Server = &alone
	r.logf("server alone: %d pods streamed in %.1f s, %.1f s of the server's CPU (%.0f MiB)", n, alone.Seconds, alone.CPUSeconds, float64(alone.Bytes)/(1<<20))
	return nil
}
