// Command soak runs the soak of package soak: a real kube-apiserver and
// etcd, a controller with three informers on one cache file, churn, and a
// schedule of faults drawn from a seed; it writes its report to -report
// and exits 0 when every check held, 1 when one failed, 2 on a bad command
// line, 3 when it could not run. `make soak` builds and runs it:
//
//	go build -o bin/ ./cmd/snapshot ./internal/soak/cmd/soak
//	bin/soak -duration 60m -seed 1 -snapshot bin/snapshot -report soak-report
//
// To fill the file's disk it re-executes itself in new user and mount
// namespaces, where it mounts a tmpfs for the file (where the system
// allows; -disk says what to do otherwise). It also re-executes itself as
// the controller (package soakctl).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"runtime/pprof"
	"syscall"
	"time"

	"k8s.io/klog/v2"

	"github.com/warmcache/warmcache/internal/soak"
	"github.com/warmcache/warmcache/internal/soakctl"
)

// Exit codes.
const (
	exitPassed  = 0
	exitFailed  = 1
	exitUsage   = 2
	exitCannot  = 3
	roleEnv     = "WARMCACHE_SOAK_ROLE"
	roleCtl     = "controller"
	roleMounted = "namespaced"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	var code int
	switch os.Getenv(roleEnv) {
	case roleCtl:
		code = soakctl.Main(ctx, os.Args[1:], os.Stdout, os.Stderr)
	default:
		code = run(ctx, os.Args[1:])
	}
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string) int {
	quietKlog()
	fs := flag.NewFlagSet("soak", flag.ContinueOnError)
	cfg := soak.Config{Progress: os.Stderr}
	seed := fs.String("seed", "", "seed of the fault schedule (default: random, printed)")
	fs.DurationVar(&cfg.Duration, "duration", soak.DefaultDuration, "length of the fault schedule")
	fs.Float64Var(&cfg.Rate, "rate", soak.DefaultRate, "churn: target requests per second")
	fs.IntVar(&cfg.Objects, "objects", soak.DefaultObjects, "objects of each resource the churn keeps")
	fs.IntVar(&cfg.Workers, "workers", soak.DefaultWorkers, "churn: concurrent requests")
	fs.StringVar(&cfg.ReportDir, "report", "", "directory of the report (required)")
	fs.StringVar(&cfg.WorkDir, "workdir", "", "directory of the cluster, the cache file and the logs (default: a temporary one)")
	fs.BoolVar(&cfg.Keep, "keep", false, "keep the temporary work directory")
	fs.StringVar(&cfg.Snapshot, "snapshot", "", "the snapshot CLI binary (required)")
	fs.StringVar(&cfg.Disk, "disk", soak.DiskAuto, "how the disk is filled: auto (a tmpfs where one can be mounted, else rlimit), tmpfs, rlimit (RLIMIT_FSIZE), none")
	fs.Int64Var(&cfg.DiskSize, "disk-size", soak.DefaultDiskSize, "size of the tmpfs in bytes")
	fs.DurationVar(&cfg.ConvergeTimeout, "converge-timeout", soak.DefaultConvergeTimeout, "bound of a recovery")
	cpuProfile := fs.String("cpuprofile", "", "write the soak's own CPU profile to this file")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitPassed
		}
		return exitUsage
	}
	if fs.NArg() > 0 || cfg.ReportDir == "" || cfg.Snapshot == "" {
		fmt.Fprintln(os.Stderr, "soak: want -report DIR and -snapshot BINARY, no arguments")
		return exitUsage
	}
	if *seed == "" {
		*seed = fmt.Sprint(rand.Uint64() % 1_000_000)
		args = append(args, "-seed", *seed)
	}
	if _, err := fmt.Sscan(*seed, &cfg.Seed); err != nil {
		fmt.Fprintf(os.Stderr, "soak: -seed %q: %v\n", *seed, err)
		return exitUsage
	}
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintf(os.Stderr, "soak: %v\n", err)
		return exitCannot
	}
	if os.Getenv(roleEnv) != roleMounted && (cfg.Disk == soak.DiskAuto || cfg.Disk == soak.DiskTmpfs) {
		code, err := runNamespaced(ctx, self, args)
		if err == nil {
			return code
		}
		if cfg.Disk == soak.DiskTmpfs {
			fmt.Fprintf(os.Stderr, "soak: -disk tmpfs: %v\n", err)
			return exitCannot
		}
		fmt.Fprintf(os.Stderr, "soak: no mount namespace of its own (%v): the disk is filled with RLIMIT_FSIZE instead\n", err)
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "soak: -cpuprofile: %v\n", err)
			return exitUsage
		}
		defer func() {
			pprof.StopCPUProfile()
			f.Close()
		}()
	}
	cfg.PrivateMounts = os.Getenv(roleEnv) == roleMounted
	cfg.ControllerCommand = self
	cfg.ControllerEnv = []string{roleEnv + "=" + roleCtl}
	begin := time.Now()
	r, err := soak.Run(ctx, cfg)
	switch {
	case errors.Is(err, soak.ErrInvalidConfig):
		fmt.Fprintln(os.Stderr, err)
		return exitUsage
	case err != nil:
		fmt.Fprintf(os.Stderr, "soak: %v\n", err)
		return exitCannot
	}
	longest, _, _ := r.ConvergeStats()
	fmt.Printf("soak: seed %d, %v: %d faults, churn %.0f/s, longest convergence %.1fs, %d findings; report in %s (took %v)\n",
		r.Seed, r.Duration, len(r.Faults), r.Churn.Rate(), longest.Converge, len(r.Findings), cfg.ReportDir, time.Since(begin).Round(time.Second))
	if r.Failed() {
		return exitFailed
	}
	return exitPassed
}

// quietKlog silences the soak's own client-go log: its churn's requests
// fail by the hundred while the apiserver restarts, which it counts.
func quietKlog() {
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	_ = fs.Set("logtostderr", "false")
	_ = fs.Set("alsologtostderr", "false")
	_ = fs.Set("stderrthreshold", "FATAL")
	klog.SetOutput(io.Discard)
}

// runNamespaced runs the soak again in new mount namespaces (and a user
// namespace unless root), where it may mount a tmpfs; it returns the
// child's exit code, or an error if the child could not start.
func runNamespaced(ctx context.Context, self string, args []string) (int, error) {
	cmd := exec.Command(self, args...)
	cmd.Env = append(os.Environ(), roleEnv+"="+roleMounted)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNS, Pdeathsig: syscall.SIGKILL}
	if os.Getuid() != 0 {
		cmd.SysProcAttr.Cloneflags |= syscall.CLONE_NEWUSER
		cmd.SysProcAttr.UidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getuid(), Size: 1}}
		cmd.SysProcAttr.GidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getgid(), Size: 1}}
	}
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	done := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
			_ = cmd.Process.Signal(syscall.SIGTERM)
		case <-done:
		}
	}()
	err := cmd.Wait()
	close(done)
	var exit *exec.ExitError
	switch {
	case err == nil:
		return exitPassed, nil
	case errors.As(err, &exit):
		return exit.ExitCode(), nil
	default:
		return exitCannot, nil
	}
}
