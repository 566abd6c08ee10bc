// Command snapshotbench measures the snapshot CLI on a cache file of
// podgen pods, and kubectl's printers on the same objects.
//
// Each case runs the snapshot binary (built from this module unless
// -snapshot names one) as a child process, -runs times, its output
// counted and discarded: the table (list pods -A), -o json, -o yaml,
// export, and --sort-by .metadata.creationTimestamp. For each it reports
// the wall time, the CPU time (user and system) and the peak anonymous
// resident memory (the Go heap, stacks and runtime: what the command
// holds; the pages of the mapped cache file are page cache) as the median
// of the runs with their minimum and maximum.
//
// A run's time depends on what else the machine does: with 2 CPUs, one
// busy process of another user slows a command that decodes on both by
// up to half. So that a slow run can be told from a slow command, the file
// is flushed and read through once before the first run (no run reads it
// from disk or waits for its writeback), and each run records the CPU
// time other processes took meanwhile (the machine's busy time from
// /proc/stat, less the command's own), the 1-minute load average at its
// start and how much of the file the page cache held (mincore). Before
// each run it waits, up to -idle-wait, for the CPUs to be idle. The table
// gives the median of the others' CPU time; the lines after it give each
// run's figures.
//
// The kubectl rows are k8s.io/cli-runtime's JSONPrinter and YAMLPrinter
// printing the objects as kubectl get -o json|yaml does for a list: the
// objects as kubectl receives them (unstructured, decoded from the JSON the
// API server sends), wrapped in a v1 List, marshalled to JSON, decoded to
// an unstructured List and printed. Only that client-side part is
// measured, in a child process of this program, with -kubectl-n objects
// (kubectl holds every object: at 100,000 podgen pods it needs gigabytes).
//
// Usage:
//
//	go run ./benchmarks/cmd/snapshotbench [-n 100000] [-runs 3] [-dir DIR] [-cases table,json,yaml,export,sort]
//	    [-kubectl-n 10000] [-snapshot BIN] [-idle-wait 2m]
//
// The cache files (snapshotbench-N.db) are written once into DIR and
// reused. The table goes to stdout, progress to stderr. Exit status: 0 on
// success, 1 if a measurement failed, 2 for bad flags.
package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/warmcache/warmcache/benchmarks/cmd/snapshotbench/internal/hostload"
	"github.com/warmcache/warmcache/benchmarks/internal/cmdrun"
	"github.com/warmcache/warmcache/benchmarks/internal/machine"
	"github.com/warmcache/warmcache/benchmarks/internal/procmem"
)

// cases are the snapshot commands measured, by name; FILE is the cache
// file.
var cases = []struct {
	name string
	args []string
}{
	{"table", []string{"list", "FILE", "pods", "-A"}},
	{"json", []string{"list", "FILE", "pods", "-A", "-o", "json"}},
	{"yaml", []string{"list", "FILE", "pods", "-A", "-o", "yaml"}},
	{"export", []string{"export", "FILE", "pods"}},
	{"sort", []string{"list", "FILE", "pods", "-A", "--sort-by", ".metadata.creationTimestamp"}},
}

func caseNames() []string {
	var out []string
	for _, c := range cases {
		out = append(out, c.name)
	}
	return out
}

type options struct {
	n        int
	kubectlN int
	runs     int
	idleWait time.Duration
	dir      string
	cases    []string
	snapshot string
	// child is the hidden mode in which the program measures kubectl's
	// printer (json or yaml) on the file childFile.
	child     string
	childFile string
}

func parse(args []string, stderr io.Writer) (options, error) {
	fs := cmdrun.FlagSet("snapshotbench", stderr)
	var o options
	fs.IntVar(&o.n, "n", 100000, "number of pods of the file the snapshot cases read")
	fs.IntVar(&o.kubectlN, "kubectl-n", 10000, "number of pods of the side-by-side comparison with kubectl's printers (0: none)")
	fs.IntVar(&o.runs, "runs", 3, "runs of each case")
	fs.DurationVar(&o.idleWait, "idle-wait", 2*time.Minute, "before each run, wait up to this long for the CPUs to be idle (busy under 10% over 2s; 0: do not wait)")
	fs.StringVar(&o.dir, "dir", os.TempDir(), "directory of the cache files (written once, then reused)")
	cmdrun.NamesVar(fs, &o.cases, "cases", caseNames(), "comma-separated `cases` to measure")
	fs.StringVar(&o.snapshot, "snapshot", "", "snapshot binary to measure (default: built from this module into -dir)")
	fs.StringVar(&o.child, "kubectl-child", "", "internal: measure kubectl's printer of this format on -kubectl-file")
	fs.StringVar(&o.childFile, "kubectl-file", "", "internal: the cache file of -kubectl-child")
	if err := cmdrun.Parse(fs, args); err != nil {
		return o, err
	}
	if o.child != "" {
		if o.child != "json" && o.child != "yaml" || o.childFile == "" {
			return o, fmt.Errorf("%w: -kubectl-child json|yaml with -kubectl-file", cmdrun.ErrUsage)
		}
		return o, nil
	}
	if o.n <= 0 || o.runs <= 0 || o.kubectlN < 0 || o.idleWait < 0 {
		return o, fmt.Errorf("%w: -n and -runs must be positive, -kubectl-n and -idle-wait not negative", cmdrun.ErrUsage)
	}
	return o, nil
}

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int {
	return cmdrun.Run("snapshotbench", args, stderr, parse, func(ctx context.Context, o options) error {
		if o.child != "" {
			return kubectlChild(ctx, o.child, o.childFile, stdout)
		}
		return measureAll(ctx, o, args, stdout, stderr)
	})
}

// sample is one run's figures.
type sample struct {
	Wall     time.Duration `json:"wall"`
	CPU      time.Duration `json:"cpu"`
	PeakAnon uint64        `json:"peakAnon"`
	Bytes    int64         `json:"bytes"`
	// Sum is the SHA-256 of the output.
	Sum string `json:"sum"`
	// host is what else the machine did during the run.
	host hostFigures
}

// hostFigures are what else the machine did during a run.
type hostFigures struct {
	// others is the CPU time other processes took; steal the time the
	// hypervisor gave other machines.
	others, steal time.Duration
	// load1 is the 1-minute load average at the start.
	load1 float64
	// resident is the fraction of the cache file in the page cache at
	// the start; -1 if unknown.
	resident float64
	// idle is "idle" when the CPUs were idle before the run, "busy" when
	// -idle-wait passed without, "" when not waited for.
	idle string
}

// waitIdle waits up to d for the CPUs to be idle, and says whether they
// were ("idle", "busy", or "" when d is 0 or the machine does not tell).
func waitIdle(ctx context.Context, d time.Duration, stderr io.Writer) string {
	if d == 0 {
		return ""
	}
	idle, busy, err := hostload.WaitIdle(ctx, hostload.IdleOptions{Timeout: d})
	switch {
	case err != nil:
		return ""
	case !idle:
		fmt.Fprintf(stderr, "snapshotbench: the CPUs are still %.0f%% busy after %s: running anyway\n", 100*busy, d)
		return "busy"
	}
	return "idle"
}

// hostWatch reads the machine's counters at the start of a run.
type hostWatch struct {
	cpu      hostload.CPU
	cpuErr   error
	load1    float64
	resident float64
}

func watchHost(file string) hostWatch {
	w := hostWatch{load1: machine.Read().Load1, resident: -1}
	if r, err := hostload.Resident(file); err == nil {
		w.resident = r
	}
	w.cpu, w.cpuErr = hostload.ReadCPU()
	return w
}

// done returns the figures of the run that started at w, in which the
// measured process took own CPU time.
func (w hostWatch) done(own time.Duration) hostFigures {
	h := hostFigures{load1: w.load1, resident: w.resident, others: -1, steal: -1}
	if after, err := hostload.ReadCPU(); err == nil && w.cpuErr == nil {
		h.others, h.steal = hostload.Others(w.cpu, after, own)
	}
	return h
}

// row is a measured case: its samples.
type row struct {
	name    string
	n       int
	samples []sample
}

func measureAll(ctx context.Context, o options, args []string, stdout, stderr io.Writer) error {
	before := machine.Read()
	bin := o.snapshot
	if bin == "" {
		bin = filepath.Join(o.dir, "snapshotbench-snapshot")
		fmt.Fprintf(stderr, "snapshotbench: building cmd/snapshot...\n")
		build := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/warmcache/warmcache/cmd/snapshot")
		build.Stderr = stderr
		if err := build.Run(); err != nil {
			return fmt.Errorf("go build cmd/snapshot: %w", err)
		}
	}
	var rows []row
	sizes := []int{o.n}
	if o.kubectlN > 0 && o.kubectlN != o.n {
		sizes = append([]int{o.kubectlN}, sizes...)
	}
	for _, n := range sizes {
		file, err := cacheFile(ctx, o.dir, n, stderr)
		if err != nil {
			return err
		}
		fmt.Fprintf(stderr, "snapshotbench: flushing and reading %s into the page cache...\n", file)
		if err := hostload.Warm(file); err != nil {
			return err
		}
		if n == o.kubectlN {
			self, err := os.Executable()
			if err != nil {
				return err
			}
			for _, format := range []string{"json", "yaml"} {
				r := row{name: "kubectl printer -o " + format, n: n}
				for i := range o.runs {
					fmt.Fprintf(stderr, "snapshotbench: %s, %d pods, run %d...\n", r.name, n, i+1)
					idle := waitIdle(ctx, o.idleWait, stderr)
					s, err := runKubectlChild(ctx, self, format, file)
					if err != nil {
						return err
					}
					s.host.idle = idle
					r.samples = append(r.samples, s)
				}
				rows = append(rows, r)
			}
		}
		for _, c := range cases {
			if !slices.Contains(o.cases, c.name) || (n != o.n && c.name != "json" && c.name != "yaml") {
				continue
			}
			r := row{name: "snapshot " + c.name, n: n}
			for i := range o.runs {
				fmt.Fprintf(stderr, "snapshotbench: %s, %d pods, run %d...\n", r.name, n, i+1)
				idle := waitIdle(ctx, o.idleWait, stderr)
				s, err := runSnapshot(ctx, bin, c.args, file)
				if err != nil {
					return fmt.Errorf("%s: %w", r.name, err)
				}
				s.host.idle = idle
				r.samples = append(r.samples, s)
			}
			rows = append(rows, r)
		}
	}
	return writeTable(stdout, rows, before, machine.Read(), args, o)
}

// runSnapshot runs the snapshot binary once with args (FILE replaced)
// and measures it.
func runSnapshot(ctx context.Context, bin string, args []string, file string) (sample, error) {
	argv := slices.Clone(args)
	for i, a := range argv {
		if a == "FILE" {
			argv[i] = file
		}
	}
	cmd := exec.CommandContext(ctx, bin, argv...)
	var out countingWriter
	var errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	host := watchHost(file)
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return sample{}, err
	}
	sampler, serr := procmem.Start(cmd.Process.Pid, 0)
	err := cmd.Wait()
	wall := time.Since(start)
	var peak procmem.Usage
	if serr == nil {
		peak, _ = sampler.Stop()
	}
	if err != nil {
		return sample{}, fmt.Errorf("snapshot %s: %w: %s", strings.Join(argv, " "), err, errOut.String())
	}
	own := cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	return sample{Wall: wall, CPU: own, PeakAnon: peak.Anon, Bytes: out.n, Sum: out.sum(), host: host.done(own)}, nil
}

// runKubectlChild runs this program in its kubectl mode and reads its
// figures.
func runKubectlChild(ctx context.Context, self, format, file string) (sample, error) {
	cmd := exec.CommandContext(ctx, self, "-kubectl-child", format, "-kubectl-file", file)
	cmd.Env = append(os.Environ(), childEnv+"=1")
	var errOut strings.Builder
	cmd.Stderr = &errOut
	host := watchHost(file)
	out, err := cmd.Output()
	if err != nil {
		return sample{}, fmt.Errorf("kubectl printer -o %s: %w: %s", format, err, errOut.String())
	}
	var s sample
	if err := json.Unmarshal(out, &s); err != nil {
		return sample{}, fmt.Errorf("kubectl printer -o %s: %w: %q", format, err, out)
	}
	s.host = host.done(cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime())
	return s, nil
}

// childEnv is set in the environment of the kubectl child, so that a
// test binary standing for the program knows to run it.
const childEnv = "SNAPSHOTBENCH_KUBECTL_CHILD"

// countingWriter counts and hashes what is written, and discards it.
type countingWriter struct {
	n int64
	h hash.Hash
}

func (w *countingWriter) Write(b []byte) (int, error) {
	if w.h == nil {
		w.h = sha256.New()
	}
	w.n += int64(len(b))
	return w.h.Write(b)
}

func (w *countingWriter) sum() string {
	if w.h == nil {
		w.h = sha256.New()
	}
	return hex.EncodeToString(w.h.Sum(nil))
}

// writeTable prints the rows: median and spread of each figure.
func writeTable(w io.Writer, rows []row, before, after machine.Info, args []string, o options) error {
	fmt.Fprintf(w, "snapshot CLI and kubectl's printers on podgen pods, %d runs each\n%s\n\n", o.runs, before)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "case\tpods\twall s (min-max)\tCPU s (min-max)\tpeak anon MiB (min-max)\toutput MiB\tothers' CPU s (min-max)\t")
	for _, r := range rows {
		wall := spread(r.samples, func(s sample) float64 { return s.Wall.Seconds() })
		cpu := spread(r.samples, func(s sample) float64 { return s.CPU.Seconds() })
		mem := spread(r.samples, func(s sample) float64 { return float64(s.PeakAnon) / (1 << 20) })
		others := spread(r.samples, func(s sample) float64 { return s.host.others.Seconds() })
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%.0f\t%s\t\n", r.name, r.n, wall, cpu, mem, float64(r.samples[0].Bytes)/(1<<20), others)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	writeRuns(w, rows)
	for _, format := range []string{"json", "yaml"} {
		k := slices.IndexFunc(rows, func(r row) bool { return r.name == "kubectl printer -o "+format })
		s := slices.IndexFunc(rows, func(r row) bool { return r.name == "snapshot "+format && k >= 0 && r.n == rows[k].n })
		if k >= 0 && s >= 0 {
			same := "identical"
			if rows[k].samples[0].Sum != rows[s].samples[0].Sum {
				same = "DIFFERENT"
			}
			fmt.Fprintf(w, "\n-o %s at %d pods: snapshot's output and kubectl's printer's are %s (SHA-256 %s)", format, rows[k].n, same, rows[s].samples[0].Sum[:16])
		}
	}
	fmt.Fprintln(w)
	if l := machine.RunLabel(before, after); l != "" {
		fmt.Fprintf(w, "\n%s\n", l)
	}
	fmt.Fprintf(w, "\nkubectl printer: the client side of kubectl get -o json|yaml (decode the List's JSON, print it with k8s.io/cli-runtime's printer), in a child process\n")
	fmt.Fprintf(w, "command: go run ./benchmarks/cmd/snapshotbench %s\n", strings.Join(args, " "))
	return nil
}

// writeRuns prints each run's wall time beside what else the machine did
// meanwhile.
func writeRuns(w io.Writer, rows []row) {
	fmt.Fprintf(w, "\nruns: wall s [others' CPU s, stolen s, load average at the start, file in the page cache, CPUs before the start]\n")
	for _, r := range rows {
		var runs []string
		for _, s := range r.samples {
			h := s.host
			resident := "?"
			if h.resident >= 0 {
				resident = fmt.Sprintf("%.0f%%", 100*h.resident)
			}
			idle := h.idle
			if idle == "" {
				idle = "-"
			}
			runs = append(runs, fmt.Sprintf("%.2f [%.2f, %.2f, %.2f, %s, %s]", s.Wall.Seconds(), h.others.Seconds(), h.steal.Seconds(), h.load1, resident, idle))
		}
		fmt.Fprintf(w, "  %s, %d pods: %s\n", r.name, r.n, strings.Join(runs, "; "))
	}
}

// spread formats the median of f over samples with its minimum and
// maximum.
func spread(samples []sample, f func(sample) float64) string {
	var v []float64
	for _, s := range samples {
		v = append(v, f(s))
	}
	slices.Sort(v)
	return fmt.Sprintf("%.2f (%.2f-%.2f)", v[len(v)/2], v[0], v[len(v)-1])
}

// errNoFile is returned when the cache file cannot be written.
var errNoFile = errors.New("cannot write the cache file")

// cacheFile returns the cache file of n podgen pods in dir, writing it
// first if it does not exist.
func cacheFile(ctx context.Context, dir string, n int, stderr io.Writer) (string, error) {
	path := filepath.Join(dir, "snapshotbench-"+strconv.Itoa(n)+".db")
	if _, err := os.Stat(path); err == nil {
		return path, nil
	}
	fmt.Fprintf(stderr, "snapshotbench: writing %d pods to %s...\n", n, path)
	if err := writeCacheFile(ctx, path, n); err != nil {
		return "", fmt.Errorf("%w %s: %w", errNoFile, path, err)
	}
	return path, nil
}
