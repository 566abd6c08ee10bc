// Command informerbench measures warmcache's informer side by side with
// client-go's SharedIndexInformer, fed by the same fake API server over
// HTTP with protobuf (as kube-apiserver serves), and prints a table with
// each informer's ratio to client-go: cold sync time and peak heap, steady
// heap, warm restart time (bolt), sustained update events per second.
//
// Usage:
//
//	go run ./benchmarks/cmd/informerbench [-n 100000] [-updates 400000] [-churn-hot 0] [-relist 0,10,100] [-impl client-go,memory,bolt] [-dir DIR] [-cpuprofile-dir DIR] [-skip-server-alone] [-rounds 1] [-server genserver|fakeapi|kube-apiserver] [-churn-workers 16] [-create-workers 16] [-bolt-gogc N] [-bolt-replay-headroom MiB] [-batch-size N] [-queue-capacity N]
//
// The server (a benchmarks/internal/genserver with -n podgen pods, which
// generates each pod when it serves it and encodes on every core; with
// -server fakeapi, internal/fakeapi on internal/fakesource, which keeps
// every pod on its heap and costs two to three times the CPU per event)
// runs in a child process — this program started again — so that the heap
// measured is the informers' only. The informers run one after
// the other against it. Events/s: the server applies -updates updates
// while holding back the watch streams, then releases them; the figure is
// the update notifications per second the informer's handler receives,
// over whole GC periods of the informer's process (so that collections of
// a large heap are paid in proportion, not all or nothing), and over the
// whole churn. -updates defaults to 4 times -n, at most 400,000 (six or
// more of client-go's collections at 100k pods). The updates are spread
// over every pod (each updated about 4 times by default); with -churn-hot
// N they cycle over a hot set of N pods (spread over the namespaces), as a
// rollout updates a few pods many times, and the churn's rows and the
// title say so.
// 410 relist: the server changes -relist percent of the pods while holding
// back the watch streams, then restarts (history compacted), so that the
// informer's resumed watch gets 410 Expired and it relists; the figures
// run from the restart to the handler having been told of every change.
//
// With -server kube-apiserver the same measurements run against a real
// kube-apiserver and etcd (benchmarks/internal/kubeserver, the binaries of
// internal/kubebin): the pods are created through its API
// (-create-workers at a time); the churn's updates are made through it by
// -churn-workers concurrent writers while the informers watch, so that
// events/s is what the server delivers, beside the rate at which it
// applied the writes; a 410 relist's changes are made while a proxy holds
// the informers' connections back, then etcd is compacted and
// kube-apiserver restarted; requests are counted from its audit log.
// -updates defaults to min(n, 100000) there, and the server alone is not
// measured.
//
// Before the informers, unless -skip-server-alone, the server is measured
// alone: a client reads a WatchList of every pod and the backlog of a churn
// of -updates updates, splitting the frames and decoding nothing, which is
// the most the server can serve. Each phase also reports the server
// process's CPU time, and the informer process's collections and
// allocations, so that a reader can tell whether the server was the limit.
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
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/warmcache/warmcache/benchmarks/internal/apiproc"
	"github.com/warmcache/warmcache/benchmarks/internal/cmdrun"
	"github.com/warmcache/warmcache/benchmarks/internal/informerbench"
	"github.com/warmcache/warmcache/benchmarks/internal/kubeserver"
	"github.com/warmcache/warmcache/benchmarks/internal/machine"
	"github.com/warmcache/warmcache/benchmarks/internal/syncflag"
	"github.com/warmcache/warmcache/informer"
	"github.com/warmcache/warmcache/internal/kubebin"
	"github.com/warmcache/warmcache/store/bolt"
)

type options struct {
	cmdrun.Bench
	updates     int
	churnHot    int
	sync        bolt.SyncPolicy
	pageSize    int
	batchSize   int
	queueCap    int
	contentType string
	relists     []int
	profileDir  string
	skipAlone   bool
	rounds      int
	boltGOGC    int
	headroomMiB int
	server      string
	// workers and createWorkers are kube-apiserver's concurrent updates
	// and creates.
	workers, createWorkers int
}

// serverKube is the -server that runs a real kube-apiserver and etcd.
const serverKube = "kube-apiserver"

// servers are the -server values, the default first.
var servers = append(append([]string{}, apiproc.Servers...), serverKube)

// kubeDefaultUpdates is -updates' default with kube-apiserver, whose
// churn goes at the rate it applies updates (about a thousand a second on
// two cores): n, at most 100,000.
func kubeDefaultUpdates(n int) int { return min(n, 100000) }

func parse(args []string, stderr io.Writer) (options, error) {
	fs := cmdrun.FlagSet("informerbench", stderr)
	var o options
	var sync, encoding, relists string
	o.Flags(fs, informerbench.Impls, "informers", "")
	fs.IntVar(&o.updates, "updates", 0, "number of updates of the events/s measurement (default min(4n, 400000))")
	fs.IntVar(&o.churnHot, "churn-hot", 0, "restrict the events/s measurement's updates (and the server alone's) to a hot set of this many pods, at most -n, spread over the namespaces and each updated about updates/N times, as a rollout updates a few pods many times; the 410 relists still change pods spread over all (0: spread over every pod)")
	fs.StringVar(&sync, "bolt-sync", "onclose", "bolt durability policy: "+strings.Join(syncflag.Names(), ", ")+" (the first is the store's default)")
	fs.IntVar(&o.pageSize, "bolt-page-size", 0, "page size of the bolt store's file in bytes, a power of two (0: the store's default)")
	fs.IntVar(&o.batchSize, "batch-size", 0, "warmcache informers' BatchSize, the most keys applied in one store write (0: the informer's default, "+strconv.Itoa(informer.DefaultBatchSize)+")")
	fs.IntVar(&o.queueCap, "queue-capacity", 0, "warmcache informers' QueueCapacity, the most deltas queued between the watch and the store (0: the informer's default, "+strconv.Itoa(informer.DefaultQueueCapacity)+", or two batches if larger)")
	fs.StringVar(&relists, "relist", joinInts(informerbench.DefaultRelistPercents), "comma-separated percentages of pods changed before a forced 410 relist, one measurement each (empty: none)")
	fs.StringVar(&o.profileDir, "cpuprofile-dir", "", "directory to write a CPU profile of each implementation's cold sync, churn and relists into (with -rounds, a directory roundN in it per round; IMPL-cold.pprof, IMPL-churn.pprof, IMPL-relistPCT.pprof, bolt-warm-replay.pprof, bolt-warm-nohandler.pprof), and allocation profiles at the start and end of each (IMPL-PHASE-allocs-start.pprof, -end.pprof: compare with pprof -base; empty: none)")
	fs.StringVar(&o.server, "server", apiproc.ServerGen, "the API server: "+apiproc.ServerGen+" (fake: generates each pod when it serves it), "+apiproc.ServerFake+" (fake: keeps every pod on its heap) or "+serverKube+" (a real one and etcd, the pods created through its API; -updates defaults to min(n, 100000) there)")
	fs.IntVar(&o.workers, "churn-workers", 16, "with -server "+serverKube+": concurrent updates of a churn")
	fs.IntVar(&o.createWorkers, "create-workers", 16, "with -server "+serverKube+": concurrent creates of the pods")
	fs.IntVar(&o.headroomMiB, "bolt-replay-headroom", -1, "MiB the bolt store lends the collector during a replay (bolt.Options.ReplayHeadroom; -1: the store's default, 0: none)")
	fs.IntVar(&o.boltGOGC, "bolt-gogc", 0, "GOGC during the bolt informer's phases only (0: the process's, 100 unless GOGC is set); its heap is a few MB, so a higher value costs little memory and saves collections")
	fs.IntVar(&o.rounds, "rounds", 1, "rounds of the informers' measurements on the one server, a table each (the server's pods are created once: with kube-apiserver, minutes at 100k)")
	fs.BoolVar(&o.skipAlone, "skip-server-alone", false, "skip the measurement of the server alone (a client that reads its streams without decoding them) before the informers")
	fs.StringVar(&encoding, "encoding", "protobuf", "wire encoding: protobuf or json")
	if err := cmdrun.Parse(fs, args); err != nil {
		return o, err
	}
	if o.N <= 0 || o.updates < 0 {
		return o, fmt.Errorf("%w: -n must be positive and -updates not negative", cmdrun.ErrUsage)
	}
	if o.rounds <= 0 {
		return o, fmt.Errorf("%w: -rounds must be positive", cmdrun.ErrUsage)
	}
	if o.batchSize < 0 || o.queueCap < 0 {
		return o, fmt.Errorf("%w: -batch-size and -queue-capacity must not be negative", cmdrun.ErrUsage)
	}
	if o.churnHot < 0 || o.churnHot > o.N {
		return o, fmt.Errorf("%w: -churn-hot %d: want 0 (every pod) to -n (%d)", cmdrun.ErrUsage, o.churnHot, o.N)
	}
	var err error
	if o.sync, err = syncflag.Parse(sync); err != nil {
		return o, fmt.Errorf("%w: -bolt-sync: %w", cmdrun.ErrUsage, err)
	}
	if o.headroomMiB < -1 {
		return o, fmt.Errorf("%w: -bolt-replay-headroom %d: want -1 (the default), 0 (none) or a number of MiB", cmdrun.ErrUsage, o.headroomMiB)
	}
	if err := syncflag.CheckPageSize(o.pageSize); err != nil {
		return o, fmt.Errorf("%w: -bolt-page-size: %w", cmdrun.ErrUsage, err)
	}
	switch encoding {
	case "protobuf":
		o.contentType = informerbench.ProtobufContentType
	case "json":
		o.contentType = "application/json"
	default:
		return o, fmt.Errorf("%w: -encoding %q: want protobuf or json", cmdrun.ErrUsage, encoding)
	}
	o.relists = []int{}
	for _, f := range strings.Split(relists, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		pct, err := strconv.Atoi(f)
		if err != nil || pct < 0 || pct > 100 {
			return o, fmt.Errorf("%w: -relist %q: want percentages from 0 to 100", cmdrun.ErrUsage, f)
		}
		o.relists = append(o.relists, pct)
	}
	if !slices.Contains(servers, o.server) {
		return o, fmt.Errorf("%w: -server %q: want one of %v", cmdrun.ErrUsage, o.server, servers)
	}
	if o.workers <= 0 || o.createWorkers <= 0 {
		return o, fmt.Errorf("%w: -churn-workers and -create-workers must be positive", cmdrun.ErrUsage)
	}
	if o.server == serverKube && o.updates == 0 {
		o.updates = kubeDefaultUpdates(o.N)
	}
	return o, nil
}

func main() {
	apiproc.MaybeServe()
	kubeserver.MaybeServe()
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	// The server's standard error is copied to stderr too, concurrently.
	stderr = cmdrun.LockedWriter(stderr)
	return cmdrun.Run("informerbench", args, stderr, parse, func(ctx context.Context, o options) error {
		return measureAll(ctx, o, args, stdout, stderr)
	})
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, n := range v {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ",")
}

func measureAll(ctx context.Context, o options, args []string, stdout, stderr io.Writer) (err error) {
	first := machine.Read()
	dir, err := os.MkdirTemp(o.Dir, "informerbench-")
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, os.RemoveAll(dir)) }()

	fmt.Fprintf(stderr, "informerbench: starting the server with %d pods...\n", o.N)
	start := time.Now()
	var srv informerbench.Server
	var proc *apiproc.Process // nil with kube-apiserver
	if o.server == serverKube {
		ks, err := kubeserver.Start(ctx, kubeserver.Options{Pods: o.N, Workers: o.workers, CreateWorkers: o.createWorkers, Stderr: stderr})
		if err != nil {
			return err
		}
		defer func() { err = errors.Join(err, ks.Close()) }()
		srv = ks
	} else {
		if proc, err = apiproc.Start(ctx, apiproc.Options{Pods: o.N, Stderr: stderr, Server: o.server}); err != nil {
			return err
		}
		defer func() { err = errors.Join(err, proc.Close()) }()
		srv = proc
	}
	fmt.Fprintf(stderr, "informerbench: %s ready in %v\n", o.server, time.Since(start).Round(time.Millisecond))

	ro := informerbench.RunOptions{
		Options: informerbench.Options{Dir: dir, BoltSync: o.sync, BoltPageSize: o.pageSize, ContentType: o.contentType,
			BatchSize: o.batchSize, QueueCapacity: o.queueCap, BoltReplayHeadroom: o.replayHeadroom()},
		Updates:        o.updates,
		ChurnHot:       o.churnHot,
		RelistPercents: o.relists,
		ProfileDir:     o.profileDir,
	}
	// Generation 1 is the server alone's churn, the informers' follow.
	var alone *informerbench.ServerAlone
	if !o.skipAlone && proc != nil {
		updates := o.updates
		if updates == 0 {
			updates = informerbench.DefaultUpdates(o.N)
		}
		fmt.Fprintf(stderr, "informerbench: measuring the server alone...\n")
		a, err := informerbench.MeasureServerAlone(ctx, proc, o.N, updates, 1, o.churnHot, o.contentType)
		if err != nil {
			return err
		}
		alone = &a
	}
	for round := range o.rounds {
		if o.rounds > 1 {
			fmt.Fprintf(stderr, "informerbench: round %d of %d\n", round+1, o.rounds)
		}
		// Generations: the server alone's is 1, each measurement's its own.
		if err := measureRound(ctx, o, srv, ro, alone, first, 2+round*len(o.Impls), round, args, stdout, stderr); err != nil {
			return err
		}
	}
	return nil
}

// measureRound measures every informer of o.Impls once on srv, their
// generations from gen on, and writes their table to stdout. With more
// than one round, each round's profiles go to a directory of its own
// (roundN) under -cpuprofile-dir. first is the machine before the run
// began: whether others kept it busy, which a later round's start cannot
// tell from the tail of the round before.
func measureRound(ctx context.Context, o options, srv informerbench.Server, ro informerbench.RunOptions, alone *informerbench.ServerAlone, first machine.Info, gen, round int, args []string, stdout, stderr io.Writer) error {
	m := machine.Read()
	if o.rounds > 1 && ro.ProfileDir != "" {
		ro.ProfileDir = filepath.Join(ro.ProfileDir, fmt.Sprintf("round%d", round+1))
		if err := os.MkdirAll(ro.ProfileDir, 0o755); err != nil {
			return err
		}
	}
	var results []informerbench.Result
	for i, impl := range o.Impls {
		fmt.Fprintf(stderr, "informerbench: measuring %s...\n", impl)
		start := time.Now()
		restore := func() {}
		if impl == informerbench.Bolt && o.boltGOGC > 0 {
			prev := debug.SetGCPercent(o.boltGOGC)
			restore = func() { debug.SetGCPercent(prev) }
		}
		r, err := informerbench.Measure(ctx, srv, impl, o.N, gen+i, ro)
		restore()
		if err != nil {
			return fmt.Errorf("%s: %w", impl, err)
		}
		fmt.Fprintf(stderr, "informerbench: %s done in %v (cold sync: %d lists, %d watches, %d of them WatchList)\n",
			impl, time.Since(start).Round(time.Millisecond), r.Cold.Requests.Lists, r.Cold.Requests.Watches, r.Cold.Requests.WatchLists)
		results = append(results, r)
	}
	after := machine.Read()
	pageSize := "default page size"
	if o.pageSize != 0 {
		pageSize = fmt.Sprintf("page size %d", o.pageSize)
	}
	if o.batchSize != 0 {
		pageSize += fmt.Sprintf(", BatchSize %d", o.batchSize)
	}
	if o.queueCap != 0 {
		pageSize += fmt.Sprintf(", QueueCapacity %d", o.queueCap)
	}
	updates := fmt.Sprintf("%d updates", results[0].Updates)
	if o.churnHot > 0 {
		updates += fmt.Sprintf(" over a hot set of %d pods", o.churnHot)
	}
	if o.rounds > 1 {
		updates += fmt.Sprintf(", round %d of %d on one server", round+1, o.rounds)
	}
	title := fmt.Sprintf("warmcache informer vs client-go SharedIndexInformer: %d podgen pods over HTTP (%s) from %s, %s, bolt %v, %s\n%s",
		o.N, o.contentType, o.server, updates, o.sync, pageSize, m)
	t := informerbench.Table(title, results, alone)
	label := machine.RunLabel(first, after)
	if o.server == serverKube {
		// kube-apiserver, etcd and the writers share the machine with
		// the informers, so the load at the end is the run's own.
		label = first.Label()
	}
	if label != "" {
		t.Note("%s", label)
	}
	if after.HasLoad {
		t.Note("load average after the run: %.2f %.2f %.2f (this run and its server included)", after.Load1, after.Load5, after.Load15)
	}
	for _, r := range results {
		t.Note("%s cold sync: %d lists, %d watches (%d WatchList)", r.Impl, r.Cold.Requests.Lists, r.Cold.Requests.Watches, r.Cold.Requests.WatchLists)
	}
	if o.server == serverKube {
		t.Note("kube-apiserver %s and etcd on this machine, %d pods created through its API; the churn's updates made through it by %d concurrent writers in a process of their own while the informers watch, so that events/s is what the server delivers (its write rate beside it); informers reach it through a proxy that holds their connections while a relist's changes are made, then etcd is compacted and kube-apiserver restarted (410 Expired); requests counted from its audit log; server CPU: kube-apiserver, etcd, writers and proxy; no server alone",
			kubebin.DefaultKubernetesVersion, o.N, o.workers)
	}
	if o.headroomMiB >= 0 {
		t.Note("bolt replays with bolt.Options.ReplayHeadroom %d MiB", o.headroomMiB)
	}
	if o.boltGOGC > 0 {
		t.Note("bolt measured with GOGC=%d (debug.SetGCPercent during its phases), the others with the process's", o.boltGOGC)
	}
	t.Note("heap: bytes above the settled heap before the phase; peak sampled every 10ms, garbage included")
	t.Note("CPU: this process's user+system time during the phase (the server runs in another): what the informer cost, however busy the machine; server CPU: the server process's meanwhile; GC cycles and allocated: this process's, from runtime/metrics")
	t.Note("update rows: whole GC periods of the informer's process within the churn, from the end of its first collection after the release to the end of its last (see informerbench.Events); the whole churn's figures follow, rows \"whole churn\"")
	if o.churnHot > 0 {
		relists := ""
		if len(o.relists) > 0 {
			relists = "; the 410 relists change pods spread over all"
		}
		t.Note("churn: the %d updates cycle over a hot set of %d pods spread over the namespaces (-churn-hot), each updated about %d times%s",
			results[0].Updates, o.churnHot, (results[0].Updates+o.churnHot-1)/o.churnHot, relists)
	}
	if alone != nil {
		t.Note("server alone: its streams read by a client that splits the frames and decodes nothing, before the informers run (figures in the first column): %d pods in %.2f s (%.0f MiB), %d updates in %.2f s from their release",
			alone.Initial.Events, alone.Initial.Elapsed.Seconds(), float64(alone.Initial.Bytes)/(1<<20), alone.Churn.Events, alone.Churn.Elapsed.Seconds())
	}
	t.Note("command: go run ./benchmarks/cmd/informerbench %s", strings.Join(args, " "))
	return t.Write(stdout)
}

// replayHeadroom is -bolt-replay-headroom as bolt.Options.ReplayHeadroom.
func (o options) replayHeadroom() *int64 {
	if o.headroomMiB < 0 {
		return nil
	}
	n := int64(o.headroomMiB) << 20
	return &n
}
