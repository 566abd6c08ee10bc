package soak

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"

	"github.com/warmcache/warmcache/internal/demo"
	"github.com/warmcache/warmcache/internal/soakctl"
	"github.com/warmcache/warmcache/internal/testenv"
)

// Check names of the findings of the soak itself (see runCheck's too).
const (
	CheckConverge = "converge"
	CheckFile     = "file against the server"
	CheckVerify   = "snapshot verify"
	CheckContent  = "content"
	CheckOracle   = "LIST against etcd"
	CheckExit     = "controller exit"
	CheckStep     = "fault step"
	CheckBounds   = "bounded"
	// CheckMovedAside: a file moved aside as corrupt that the soak did
	// not damage.
	CheckMovedAside = "file moved aside"
)

// namespaces are where the churn works.
var namespaces = []string{"soak-0", "soak-1", "soak-2"}

// soak is one run.
type soak struct {
	cfg     Config
	start   time.Time // of the faults
	env     *testenv.Env
	oracle  *oracle
	cs      kubernetes.Interface
	dyn     dynamic.Interface
	meta    metadata.Interface
	proxy   *proxy
	churn   *churn
	disk    *disk
	snap    snapshotCLI
	ctl     controllerOptions
	file    string
	logDir  string
	scratch string

	// mu guards the fields below.
	mu       sync.Mutex
	current  *controller
	faulting bool // a fault or its recovery is in progress
	report   *Report

	// recording is the fault being injected, nil between faults; only
	// the goroutine that runs the schedule uses it.
	recording *FaultRecord
}

// Run runs the soak and returns its report, written to cfg.ReportDir.
// Failed checks are the report's findings, not an error: the error is for
// a soak that could not run (a bad config, a cluster that did not start,
// a report that could not be written).
func Run(ctx context.Context, cfg Config) (*Report, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	s := &soak{cfg: cfg, snap: snapshotCLI{path: cfg.Snapshot}, report: &Report{
		Seed: cfg.Seed, Duration: cfg.Duration, Started: time.Now(), Objects: cfg.Objects, Rate: cfg.Rate,
		Workers: cfg.Workers, FindingCounts: map[string]int{}, Schedule: NewSchedule(cfg.Seed, cfg.Duration),
	}}
	if err := os.MkdirAll(cfg.ReportDir, 0o755); err != nil {
		return nil, fmt.Errorf("soak: report directory: %w", err)
	}
	work := cfg.WorkDir
	if work == "" {
		if work, err = os.MkdirTemp("", "warmcache-soak-"); err != nil {
			return nil, fmt.Errorf("soak: work directory: %w", err)
		}
		if !cfg.Keep {
			defer os.RemoveAll(work)
		}
	}
	s.logf("work directory %s, seed %d, %d faults over %v", work, cfg.Seed, len(s.report.Schedule), cfg.Duration)
	runErr := s.run(ctx, work)
	if runErr != nil {
		s.report.Aborted = runErr.Error()
		s.logf("aborted: %v", runErr)
	}
	if err := s.keepLogs(); err != nil {
		s.logf("%v", err)
	}
	if err := s.report.write(cfg.ReportDir); err != nil {
		return s.report, err
	}
	if errors.Is(runErr, ErrInvalidConfig) {
		return s.report, runErr
	}
	return s.report, nil
}

func (s *soak) logf(format string, args ...any) {
	at := "setup"
	if !s.start.IsZero() {
		d := time.Since(s.start).Round(time.Second)
		at = fmt.Sprintf("%02d:%02d", int(d.Minutes()), int(d.Seconds())%60)
	}
	fmt.Fprintf(s.cfg.Progress, "%s [%s] %s\n", time.Now().Format("15:04:05"), at, fmt.Sprintf(format, args...))
}

// since returns the seconds from the start of the faults.
func (s *soak) since() float64 {
	if s.start.IsZero() {
		return 0
	}
	return time.Since(s.start).Seconds()
}

// fail records a failed check.
func (s *soak) fail(check, detail string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.report
	r.FindingCounts[check]++
	if r.FindingCounts[check] <= maxFindings {
		r.Findings = append(r.Findings, Finding{At: s.since(), Check: check, Detail: detail, Run: r.Runs})
		s.logf("FINDING %s: %s", check, detail)
	}
}

func (s *soak) run(ctx context.Context, work string) error {
	s.logDir = filepath.Join(work, "logs")
	s.scratch = filepath.Join(work, "scratch")
	diskDir := filepath.Join(work, "disk")
	envDir := filepath.Join(work, "cluster")
	for _, d := range []string{s.logDir, s.scratch, diskDir, envDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("soak: %w", err)
		}
	}
	if err := s.setUpDisk(diskDir); err != nil {
		return err
	}
	s.file = filepath.Join(diskDir, "cache.db")

	env, err := testenv.Start(ctx, nil, testenv.Options{Dir: envDir})
	if err != nil {
		return fmt.Errorf("soak: start kube-apiserver and etcd: %w", err)
	}
	defer env.Stop()
	s.env = env
	s.logf("kube-apiserver at %s, etcd at %s", env.RestConfig().Host, env.EtcdEndpoint())

	prefixes := map[string]string{}
	for _, r := range soakctl.Resources {
		prefixes[etcdPrefix(r.GVR.Group, r.GVR.Resource)] = r.Name
	}
	if s.oracle, err = startOracle(ctx, env.EtcdEndpoint(), prefixes); err != nil {
		return err
	}
	defer s.oracle.stop()

	rc := env.RestConfig()
	rc.ContentType = "application/vnd.kubernetes.protobuf"
	rc.WarningHandler = rest.NoWarnings{}
	if s.cs, err = kubernetes.NewForConfig(rc); err != nil {
		return fmt.Errorf("soak: client: %w", err)
	}
	if s.dyn, err = dynamic.NewForConfig(env.RestConfig()); err != nil {
		return fmt.Errorf("soak: client: %w", err)
	}
	if s.meta, err = metadata.NewForConfig(rc); err != nil {
		return fmt.Errorf("soak: client: %w", err)
	}
	if err := s.createCRD(ctx); err != nil {
		return err
	}
	if err := demo.EnsureNamespaces(ctx, s.cs, namespaces...); err != nil {
		return err
	}

	u, err := url.Parse(rc.Host)
	if err != nil {
		return fmt.Errorf("soak: apiserver address %q: %w", rc.Host, err)
	}
	if s.proxy, err = newProxy(u.Host); err != nil {
		return err
	}
	defer s.proxy.Close()
	viaProxy := env.RestConfig()
	viaProxy.Host = "https://" + s.proxy.Addr()
	kubeconfig := filepath.Join(work, "kubeconfig")
	if err := demo.WriteKubeconfig(viaProxy, kubeconfig); err != nil {
		return err
	}
	s.ctl = controllerOptions{command: s.cfg.ControllerCommand, env: s.cfg.ControllerEnv, kubeconfig: kubeconfig, cacheFile: s.file}

	s.churn = newChurn(s.cs, s.dyn, namespaces, s.cfg.Objects, s.cfg.Workers, s.cfg.Rate, s.cfg.Seed)
	begin := time.Now()
	if err := s.churn.populate(ctx); err != nil {
		return err
	}
	s.report.Populate = time.Since(begin)
	s.logf("created %d objects of each resource in %v", s.cfg.Objects, s.report.Populate.Round(time.Millisecond))

	// The first start is cold, and killed during its list; the next
	// start is cold again.
	if err := s.startController(ctx); err != nil {
		return err
	}
	defer s.killController()
	s.start = time.Now()
	rec := FaultRecord{At: 0, Kind: "cold start"}
	s.recording = &rec
	after := ColdKill(s.cfg.Seed)
	if err := s.sleepUntil(ctx, s.start.Add(after)); err != nil {
		return err
	}
	phase := s.killController()
	s.checkFile(ctx, "a kill during the cold start")
	if err := s.startController(ctx); err != nil {
		return err
	}
	rec.Converge = s.converge(ctx, "cold start", time.Now())
	rec.Detail = fmt.Sprintf("%d objects of each resource; killed %v into the cold start, while %s; started again", s.cfg.Objects, after.Round(time.Millisecond), phase)
	s.recording = nil
	s.record(rec)
	s.logf("cold start (%s): converged in %.1fs", rec.Detail, rec.Converge)

	stopSampling := demo.Every(ctx, s.cfg.SampleInterval, s.sample)
	defer stopSampling()

	s.churn.resume(ctx)
	for _, f := range s.report.Schedule {
		if err := s.sleepUntil(ctx, s.start.Add(f.At)); err != nil {
			return err
		}
		if err := s.inject(ctx, f); err != nil {
			return err
		}
	}
	if err := s.sleepUntil(ctx, s.start.Add(s.cfg.Duration)); err != nil {
		return err
	}
	s.churn.pause()
	s.report.Elapsed = time.Since(s.start)
	s.report.Churn = s.churn.stats()
	return s.final(ctx)
}

// keepLogLimit bounds each controller log the report keeps (its end).
const keepLogLimit = 4 << 20

// keepLogs copies into the report the logs of the controller's runs that
// a finding names, and of the runs before them: what a reproduction
// starts from.
func (s *soak) keepLogs() error {
	runs := map[int]bool{}
	for _, f := range s.report.Findings {
		for _, r := range []int{f.Run - 1, f.Run} {
			if r > 0 {
				runs[r] = true
			}
		}
	}
	if len(runs) == 0 || s.logDir == "" {
		return nil
	}
	dir := filepath.Join(s.cfg.ReportDir, "logs")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("soak: keep the logs: %w", err)
	}
	for r := range runs {
		name := fmt.Sprintf("controller-%03d.log", r)
		if err := os.WriteFile(filepath.Join(dir, name), []byte(tail(filepath.Join(s.logDir, name), keepLogLimit)), 0o644); err != nil {
			return fmt.Errorf("soak: keep the logs: %w", err)
		}
	}
	return nil
}

// setUpDisk mounts the tmpfs, or picks the fallback.
func (s *soak) setUpDisk(dir string) error {
	s.disk = &disk{dir: dir, mode: s.cfg.Disk}
	switch s.cfg.Disk {
	case DiskNone:
		s.report.DiskNote = "no disk-full fault"
	case DiskRlimit:
		s.report.DiskNote = "RLIMIT_FSIZE of the controller lowered to its file's size"
	case DiskTmpfs, DiskAuto:
		if !s.cfg.PrivateMounts {
			s.disk.mode = DiskRlimit
			s.report.DiskNote = "no mount namespace of its own; RLIMIT_FSIZE of the controller lowered to its file's size instead"
			break
		}
		if err := mountTmpfs(dir, s.cfg.DiskSize); err != nil {
			if s.cfg.Disk == DiskTmpfs {
				return err
			}
			s.disk.mode = DiskRlimit
			s.report.DiskNote = fmt.Sprintf("%v; RLIMIT_FSIZE of the controller lowered to its file's size instead", err)
			break
		}
		s.disk.mode = DiskTmpfs
		s.report.DiskNote = fmt.Sprintf("the file on a tmpfs of %d MiB, filled until ENOSPC", s.cfg.DiskSize>>20)
	}
	s.report.Disk = s.disk.mode
	s.logf("disk: %s", s.report.DiskNote)
	return nil
}

// createCRD creates the widgets' CRD and waits until they are served.
func (s *soak) createCRD(ctx context.Context) error {
	crds := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	if _, err := s.dyn.Resource(crds).Create(ctx, soakctl.WidgetCRD(), metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("soak: create the widgets' CRD: %w", err)
	}
	// Served a moment after it is established: poll a LIST.
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := s.dyn.Resource(soakctl.WidgetGVR).Namespace(namespaces[0]).List(ctx, metav1.ListOptions{Limit: 1})
		return err == nil, nil
	})
	if err != nil {
		return fmt.Errorf("soak: widgets never served: %w", err)
	}
	return nil
}

// sleepUntil waits until t; a fault's random moment, not a wait for
// anything.
func (s *soak) sleepUntil(ctx context.Context, t time.Time) error {
	d := time.Until(t)
	if d <= 0 {
		return nil
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

func (s *soak) record(f FaultRecord) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.report.Faults = append(s.report.Faults, f)
}

func (s *soak) setFaulting(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faulting = on
}

// startController starts the next run of the controller.
func (s *soak) startController(ctx context.Context) error {
	lo, err := s.oracle.Revision(ctx)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.report.Runs++
	run := s.report.Runs
	s.mu.Unlock()
	o := s.ctl
	o.logPath = filepath.Join(s.logDir, fmt.Sprintf("controller-%03d.log", run))
	c, err := startController(ctx, run, o, s.oracle, lo, s.fail)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.current = c
	s.mu.Unlock()
	return nil
}

// killController SIGKILLs the controller, if it runs, and returns how far
// it got.
func (s *soak) killController() string {
	s.mu.Lock()
	c := s.current
	s.current = nil
	s.mu.Unlock()
	if c == nil {
		return "not running"
	}
	if s.recording != nil {
		s.recording.Kills++
	}
	phase := c.check.Phase()
	if exited, err := c.Exited(); exited {
		phase = fmt.Sprintf("had exited (%v)", err)
	}
	if s.recording != nil {
		s.recording.Phases = append(s.recording.Phases, phase)
	}
	c.Kill()
	s.endRun(c)
	return phase
}

// endRun adds a finished run's counters to the report's.
func (s *soak) endRun(c *controller) {
	rt := c.check.Runtime()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.report.Checks.InitialLists += c.check.InitialLists()
	s.report.Checks.Events += c.check.Events()
	if rt == nil {
		return
	}
	k := &s.report.Counters
	k.Lists += rt.Lists
	k.Relists += rt.Relists
	k.Expired += rt.Expired
	k.Resumes += rt.Resumes
	k.ApplyFailures += rt.ApplyFailures
}

// runCounters are a run's informer counters at a moment.
type runCounters struct {
	run int
	rt  soakctl.Runtime
}

// counters returns the current run's last reported counters.
func (s *soak) counters() runCounters {
	s.mu.Lock()
	c := s.current
	s.mu.Unlock()
	if c == nil {
		return runCounters{}
	}
	out := runCounters{run: c.run}
	if rt := c.check.Runtime(); rt != nil {
		out.rt = *rt
	}
	return out
}

// noteCounters notes what the informers counted since before: relists,
// 410s and failed writes, the evidence that a fault bit. Counters start
// from zero in a new run.
func (s *soak) noteCounters(before runCounters, note func(string, ...any)) {
	now := s.counters()
	if now.run != before.run {
		before.rt = soakctl.Runtime{}
	}
	d := func(a, b int64) int64 { return max(a-b, 0) }
	relists, expired, failed := d(now.rt.Relists, before.rt.Relists), d(now.rt.Expired, before.rt.Expired), d(now.rt.ApplyFailures, before.rt.ApplyFailures)
	if relists+expired+failed > 0 {
		note("the informers counted %d relists, %d 410s, %d failed store writes", relists, expired, failed)
	}
}

// compact compacts etcd once the oracle has recorded every write, so
// that its watch is never behind the compaction.
func (s *soak) compact(ctx context.Context) (int64, error) {
	if _, err := s.oracle.Sync(ctx); err != nil {
		return 0, err
	}
	rev, err := s.env.Compact(ctx)
	if err != nil {
		return 0, fmt.Errorf("soak: %w", err)
	}
	return rev, nil
}

// inject makes one fault, waits for the recovery and records it.
func (s *soak) inject(ctx context.Context, f Fault) error {
	s.setFaulting(true)
	defer s.setFaulting(false)
	rec := FaultRecord{At: s.since(), Kind: f.Kind, Converge: -1}
	s.recording = &rec
	defer func() { s.recording = nil }()
	var detail []string
	note := func(format string, args ...any) { detail = append(detail, fmt.Sprintf(format, args...)) }
	before := s.counters()
	since := time.Now()
	var err error
	switch f.Kind {
	case FaultKill:
		since, err = s.kill(ctx, f, note)
	case FaultAPIServerRestart:
		if err = s.env.RestartAPIServer(ctx); err != nil {
			break
		}
		note("ready in %v", time.Since(since).Round(time.Millisecond))
		since = time.Now()
		if f.Again > 0 {
			if err = s.sleepUntil(ctx, since.Add(f.Again)); err != nil {
				break
			}
			since, err = s.killAndRestart(ctx, fmt.Sprintf("%v after the apiserver was ready", f.Again.Round(time.Millisecond)), note)
		}
	case FaultCompact:
		var rev int64
		if rev, err = s.compact(ctx); err == nil {
			note("to revision %d", rev)
		}
	case FaultStreamCut:
		note("%d connections cut", s.proxy.Cut())
	case FaultStreamStall:
		s.proxy.Stall()
		err = s.sleepUntil(ctx, time.Now().Add(f.Hold))
		s.proxy.Resume()
		note("held %v", f.Hold.Round(time.Millisecond))
		since = time.Now()
	case FaultStreamTruncate:
		note("%d connections cut after %d more bytes from the apiserver", s.proxy.Truncate(f.Bytes), f.Bytes)
	case FaultDiskFull:
		since, err = s.fillDisk(ctx, f, note)
	}
	if err != nil {
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		s.fail(CheckStep, fmt.Sprintf("%s: %v", f.Kind, err))
	}
	rec.Converge = s.converge(ctx, string(f.Kind), since)
	s.checkMovedAside(f, note)
	s.noteCounters(before, note)
	s.churn.resume(ctx)
	rec.Detail = strings.Join(detail, "; ")
	s.record(rec)
	conv := "did not converge"
	if rec.Converge >= 0 {
		conv = fmt.Sprintf("converged in %.1fs", rec.Converge)
	}
	s.logf("%s (%s): %s", f.Kind, rec.Detail, conv)
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	return s.oracle.Err()
}

// kill kills the controller, checks its file, makes the faults of
// f.While while it is down, starts it again after f.Hold, and kills it
// once more f.Again into that start. It returns when the last start
// began.
func (s *soak) kill(ctx context.Context, f Fault, note func(string, ...any)) (time.Time, error) {
	down := time.Now()
	note("killed while %s", s.killController())
	s.checkFile(ctx, "a kill")
	for _, w := range f.While {
		switch w {
		case FaultCompact:
			rev, err := s.compact(ctx)
			if err != nil {
				return time.Time{}, err
			}
			note("etcd compacted to %d while down", rev)
			s.recording.While = append(s.recording.While, w)
		case FaultAPIServerRestart:
			if err := s.env.RestartAPIServer(ctx); err != nil {
				return time.Time{}, err
			}
			note("apiserver restarted while down")
			s.recording.While = append(s.recording.While, w)
		case FaultPageDamage:
			d, err := damagePage(s.file, s.scratch, rand.New(rand.NewPCG(f.Seed, 0)))
			if err != nil {
				return time.Time{}, err
			}
			note("%v", d)
			s.recording.While = append(s.recording.While, w)
		}
	}
	if err := s.sleepUntil(ctx, down.Add(f.Hold)); err != nil {
		return time.Time{}, err
	}
	note("down %v", time.Since(down).Round(time.Millisecond))
	if err := s.startController(ctx); err != nil {
		return time.Time{}, err
	}
	since := time.Now()
	if f.Again > 0 {
		if err := s.sleepUntil(ctx, since.Add(f.Again)); err != nil {
			return time.Time{}, err
		}
		return s.killAndRestart(ctx, fmt.Sprintf("%v into its start", f.Again.Round(time.Millisecond)), note)
	}
	return since, nil
}

// killAndRestart kills the controller, checks the file and starts it at
// once.
func (s *soak) killAndRestart(ctx context.Context, when string, note func(string, ...any)) (time.Time, error) {
	note("killed again %s, while %s", when, s.killController())
	s.checkFile(ctx, "a kill")
	if err := s.startController(ctx); err != nil {
		return time.Time{}, err
	}
	return time.Now(), nil
}

// checkMovedAside looks for files the controller moved aside as
// corrupt, notes them and removes them (on a tmpfs they take the room the
// cache needs). A file is damaged on purpose only with FaultPageDamage:
// any other moved aside is a finding, a kill or a full disk having left
// a file the library takes for corrupt.
func (s *soak) checkMovedAside(f Fault, note func(string, ...any)) {
	// The files, not their state files (path.state) moved with them.
	moved, _ := filepath.Glob(s.file + ".corrupt-*Z")
	damaged := slices.Contains(f.While, FaultPageDamage)
	switch {
	case len(moved) > 0 && !damaged:
		s.fail(CheckMovedAside, fmt.Sprintf("after the %s, the controller moved %d files aside as corrupt: %s; see its log", f.Kind, len(moved), strings.Join(moved, ", ")))
	case damaged:
		note("%d files moved aside", len(moved))
	}
	all, _ := filepath.Glob(s.file + ".corrupt-*")
	for _, m := range all {
		_ = os.Remove(m)
	}
}

// fillDisk fills the disk for f.Hold while the controller runs.
func (s *soak) fillDisk(ctx context.Context, f Fault, note func(string, ...any)) (time.Time, error) {
	s.mu.Lock()
	c := s.current
	s.mu.Unlock()
	if c == nil {
		return time.Now(), errors.New("no controller running")
	}
	full := time.Now()
	what, err := s.disk.fill(c.Pid(), s.file)
	if err != nil {
		return full, err
	}
	note("%s", what)
	if s.disk.mode == DiskNone {
		return full, nil
	}
	// Writes into the file's free pages need no room: the cluster grows
	// by half (the file needs pages it does not have), and the informers
	// relist (an apiserver restart answers their watches 410), which
	// needs room for a second copy.
	n, werr := s.churn.grow(ctx, s.cfg.Objects/2)
	note("%d objects created", n)
	if werr == nil {
		werr = s.sleepUntil(ctx, full.Add(f.Hold/2))
	}
	if werr == nil {
		if werr = s.env.RestartAPIServer(ctx); werr == nil {
			note("apiserver restarted while full")
			werr = s.sleepUntil(ctx, full.Add(f.Hold))
		}
	}
	if err := s.disk.free(); err != nil {
		return time.Now(), err
	}
	note("full for %v", time.Since(full).Round(time.Millisecond))
	if exited, err := c.Exited(); exited {
		s.fail(CheckExit, fmt.Sprintf("run %d exited while the disk was full: %v; its log:\n%s", c.run, err, tail(c.logPath, 4096)))
	}
	return time.Now(), werr
}
