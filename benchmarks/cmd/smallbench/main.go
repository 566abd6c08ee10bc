// Command smallbench measures a small cluster's controller side by side
// with client-go, against a real kube-apiserver and etcd: the Deployments
// informer of one namespace (as k8s.io/sample-controller has), built by
// client-go's SharedInformerFactory (./clientgo) and by package informers
// on a warmcache factory (./warmcache), each its own binary and process.
// For each number of Deployments it runs, -runs times and interleaved,
// client-go, warmcache cold (a new cache file) and warmcache warm (the
// file of the cold run), and prints the range of each one's time from
// main to synced, peak resident set (VmHWM) and steady resident set after
// -settle idle (RSS, and its parts: RssAnon, and RssFile: the binary's
// and the cache file's mapped pages), and the size of both binaries.
//
// Usage, from the repository root (it builds the controllers with go
// build, and kube-apiserver and etcd as make kubebin does):
//
//	go run ./benchmarks/cmd/smallbench [-n 2000,10000] [-runs 3] [-settle 10s] [-dir DIR]
//
// The table goes to stdout, progress and each run's figures to stderr.
// Exit status: 0 on success, 1 if a measurement failed, 2 for bad flags.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/warmcache/warmcache/benchmarks/internal/cmdrun"
	"github.com/warmcache/warmcache/benchmarks/internal/machine"
	"github.com/warmcache/warmcache/benchmarks/internal/smallbench"
	"github.com/warmcache/warmcache/internal/testenv"
)

const (
	namespace  = "smallbench"
	controller = "github.com/warmcache/warmcache/benchmarks/cmd/smallbench/"
)

type options struct {
	ns     []int
	runs   int
	settle time.Duration
	dir    string
}

func parse(args []string, stderr io.Writer) (options, error) {
	fs := cmdrun.FlagSet("smallbench", stderr)
	var o options
	ns := fs.String("n", "2000,10000", "comma-separated numbers of Deployments, ascending")
	fs.IntVar(&o.runs, "runs", 3, "runs of each controller at each number")
	fs.DurationVar(&o.settle, "settle", 10*time.Second, "idle time after sync before the steady resident set is read")
	fs.StringVar(&o.dir, "dir", "", "working directory (binaries, cache files, apiserver data); default a new temporary one, removed at the end")
	if err := cmdrun.Parse(fs, args); err != nil {
		return o, err
	}
	for _, s := range strings.Split(*ns, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n <= 0 || len(o.ns) > 0 && n <= o.ns[len(o.ns)-1] {
			return o, fmt.Errorf("%w: -n %q: want positive numbers, ascending", cmdrun.ErrUsage, *ns)
		}
		o.ns = append(o.ns, n)
	}
	if o.runs <= 0 || o.settle < 0 {
		return o, fmt.Errorf("%w: -runs must be positive and -settle not negative", cmdrun.ErrUsage)
	}
	return o, nil
}

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int {
	return cmdrun.Run("smallbench", args, stderr, parse, func(ctx context.Context, o options) error {
		return measureAll(ctx, o, args, stdout, stderr)
	})
}

// impls are the controllers measured, in the order each run runs them.
var impls = []struct{ name, binary, cache string }{
	{"client-go", "clientgo", ""},
	{"warmcache cold", "warmcache", "new"},
	{"warmcache warm", "warmcache", "reuse"},
}

func measureAll(ctx context.Context, o options, args []string, stdout, stderr io.Writer) error {
	m := machine.Read()
	dir := o.dir
	if dir == "" {
		d, err := os.MkdirTemp("", "smallbench-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		dir = d
	}
	sizes := map[string]int64{}
	for _, b := range []string{"clientgo", "warmcache"} {
		fmt.Fprintf(stderr, "smallbench: building %s...\n", b)
		out := filepath.Join(dir, b)
		if msg, err := exec.CommandContext(ctx, "go", "build", "-o", out, controller+b).CombinedOutput(); err != nil {
			return fmt.Errorf("smallbench: go build %s: %w\n%s", b, err, msg)
		}
		fi, err := os.Stat(out)
		if err != nil {
			return err
		}
		sizes[b] = fi.Size()
	}
	fmt.Fprintln(stderr, "smallbench: starting kube-apiserver and etcd...")
	envDir := filepath.Join(dir, "env")
	if err := os.MkdirAll(envDir, 0o755); err != nil {
		return err
	}
	env, err := testenv.Start(ctx, nil, testenv.Options{Dir: envDir})
	if err != nil {
		return err
	}
	defer env.Stop()
	config := env.RestConfig()
	config.ContentType = "application/vnd.kubernetes.protobuf"
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		return err
	}
	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("smallbench: create namespace: %w", err)
	}
	access := filepath.Join(dir, "access.json")
	b, err := json.Marshal(smallbench.Access{Host: config.Host, BearerToken: config.BearerToken, CAData: config.CAData, Namespace: namespace})
	if err != nil {
		return err
	}
	if err := os.WriteFile(access, b, 0o600); err != nil {
		return err
	}
	results := map[int]map[string][]smallbench.Report{}
	created := 0
	for _, n := range o.ns {
		fmt.Fprintf(stderr, "smallbench: creating Deployments %d to %d...\n", created, n-1)
		if err := createDeployments(ctx, client, created, n); err != nil {
			return err
		}
		created = n
		results[n] = map[string][]smallbench.Report{}
		for r := range o.runs {
			cache := filepath.Join(dir, fmt.Sprintf("cache-%d-%d.db", n, r))
			for _, impl := range impls {
				fmt.Fprintf(stderr, "smallbench: %d Deployments, run %d: %s...\n", n, r+1, impl.name)
				args := []string{"-access", access, "-settle", o.settle.String()}
				if impl.cache != "" {
					args = append(args, "-cache", cache)
				}
				rep, err := runController(ctx, filepath.Join(dir, impl.binary), args)
				if err != nil {
					return fmt.Errorf("smallbench: %s at %d: %w", impl.name, n, err)
				}
				if rep.Objects != n {
					return fmt.Errorf("smallbench: %s at %d: listed %d Deployments", impl.name, n, rep.Objects)
				}
				fmt.Fprintf(stderr, "smallbench: %d Deployments, run %d: %s: synced in %.2f s, peak %.1f MiB, steady RSS %.1f MiB (RssAnon %.1f, RssFile %.1f)\n",
					n, r+1, impl.name, rep.Sync.Seconds(), mib(rep.Peak), mib(rep.SteadyAnon+rep.SteadyFile), mib(rep.SteadyAnon), mib(rep.SteadyFile))
				results[n][impl.name] = append(results[n][impl.name], rep)
			}
		}
	}
	after := machine.Read()
	return write(stdout, o, args, m, after, sizes, results)
}

// createDeployments creates Deployments from to to-1 on 16 workers.
func createDeployments(ctx context.Context, client kubernetes.Interface, from, to int) error {
	next := make(chan int)
	errs := make(chan error, 16)
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for i := range next {
				if _, err := client.AppsV1().Deployments(namespace).Create(ctx, deployment(i), metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
					errs <- fmt.Errorf("smallbench: create deployment %d: %w", i, err)
					return
				}
			}
		})
	}
	var err error
feed:
	for i := from; i < to; i++ {
		select {
		case next <- i:
		case err = <-errs:
			break feed
		}
	}
	close(next)
	wg.Wait()
	close(errs)
	return errors.Join(err, <-errs)
}

// deployment is a Deployment as sample-controller's Foo makes: one
// replica of one nginx container, with its labels.
func deployment(i int) *appsv1.Deployment {
	labels := map[string]string{"app": "nginx", "controller": fmt.Sprintf("foo-%d", i)}
	one := int32(1)
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("foo-%05d", i), Namespace: namespace, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: &one,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "nginx", Image: "nginx:latest"}}},
			},
		},
	}
}

// runController runs a controller binary and parses its report.
func runController(ctx context.Context, binary string, args []string) (smallbench.Report, error) {
	cmd := exec.CommandContext(ctx, binary, args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return smallbench.Report{}, fmt.Errorf("%w\n%s", err, stderr.String())
	}
	var rep smallbench.Report
	if err := json.Unmarshal(out, &rep); err != nil {
		return rep, fmt.Errorf("report %q: %w", out, err)
	}
	return rep, nil
}

func mib(b uint64) float64 { return float64(b) / (1 << 20) }

// span formats the range of values.
func span(vals []float64, format string) string {
	lo, hi := slices.Min(vals), slices.Max(vals)
	if fmt.Sprintf(format, lo) == fmt.Sprintf(format, hi) {
		return fmt.Sprintf(format, lo)
	}
	return fmt.Sprintf(format+"-"+format, lo, hi)
}

func write(w io.Writer, o options, args []string, before, after machine.Info, sizes map[string]int64, results map[int]map[string][]smallbench.Report) error {
	fmt.Fprintf(w, "a namespace's Deployments informer, client-go beside warmcache (package informers), real kube-apiserver; range of %d runs\n%s\n\n", o.runs, before)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "deployments\tcontroller\tsync s\tpeak RSS MiB\tsteady RSS MiB\tsteady anon MiB\tsteady file MiB\t")
	for _, n := range o.ns {
		for _, impl := range impls {
			reps := results[n][impl.name]
			var sync, peak, total, anon, file []float64
			for _, r := range reps {
				sync = append(sync, r.Sync.Seconds())
				peak = append(peak, mib(r.Peak))
				total = append(total, mib(r.SteadyAnon+r.SteadyFile))
				anon = append(anon, mib(r.SteadyAnon))
				file = append(file, mib(r.SteadyFile))
			}
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t\n", n, impl.name, span(sync, "%.2f"), span(peak, "%.1f"), span(total, "%.1f"), span(anon, "%.1f"), span(file, "%.1f"))
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "\nbinaries (go build): client-go %.1f MB, warmcache %.1f MB\n", float64(sizes["clientgo"])/1e6, float64(sizes["warmcache"])/1e6)
	if l := machine.RunLabel(before, after); l != "" {
		fmt.Fprintln(w, l)
	}
	fmt.Fprintf(w, "sync: from main to synced; peak: VmHWM when synced; steady: RSS (RssAnon + RssFile), RssAnon and RssFile after %v idle\n", o.settle)
	_, err := fmt.Fprintf(w, "command: go run ./benchmarks/cmd/smallbench %s\n", strings.Join(args, " "))
	return err
}
