package e2e

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/warmcache/warmcache/internal/kubebin"
)

// servePods is the number of pods of the serve tests: more than one page
// of a list in pages of servePage.
const (
	servePods = 120
	servePage = 50
)

// served is a snapshot serve process and the kubeconfig it wrote.
type served struct {
	cmd        *exec.Cmd
	kubeconfig string
	stderr     *bytes.Buffer
}

// startServe runs the snapshot binary's serve command on file until the
// test ends, and waits for its kubeconfig.
func startServe(ctx context.Context, t *testing.T, bin, file string) *served {
	t.Helper()
	s := &served{kubeconfig: filepath.Join(t.TempDir(), "kubeconfig"), stderr: &bytes.Buffer{}}
	s.cmd = exec.CommandContext(ctx, bin, "serve", file, "--kubeconfig", s.kubeconfig)
	pipe, err := s.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = s.cmd.Process.Signal(os.Interrupt)
		_ = s.cmd.Wait()
	})
	// Its first line says it serves: the kubeconfig is written.
	line, err := bufio.NewReader(pipe).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "Serving ") {
		t.Fatalf("snapshot serve: %q, %v", line, err)
	}
	go func() { _, _ = s.stderr.ReadFrom(pipe) }()
	return s
}

// servedFile writes servePods pods in a namespace of the shared apiserver,
// caches them with the controller, and serves its file. It returns the
// cluster, the namespace and the server.
func servedFile(ctx context.Context, t *testing.T) (*cluster, string, *served) {
	t.Helper()
	c, ns := sharedCluster(ctx, t, "serve")
	c.createPods(ctx, t, ns, 0, servePods)
	file := filepath.Join(t.TempDir(), "cache.db")
	ctl := startChild(t, childOptions{kubeconfig: c.kubeconfig, cacheFile: file, namespace: ns})
	ctl.waitSynced(ctx)
	ctl.waitConverged(ctx, c.listPods(ctx, t, ns))
	ctl.stop()
	return c, ns, startServe(ctx, t, buildSnapshot(ctx, t), file)
}

// TestServeClientGo reads a controller's cache file through snapshot serve
// with client-go, as a program reads a cluster: the pods are the
// apiserver's, listed whole and in pages, got one by one, watched (the
// stored state, then an open watch); writes are refused.
func TestServeClientGo(t *testing.T) {
	t.Parallel()
	ctx := needEnv(t)
	c, ns, s := servedFile(ctx, t)
	cfg, err := clientcmd.BuildConfigFromFlags("", s.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cs := kubernetes.NewForConfigOrDie(cfg)

	want, err := c.cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Items) != servePods {
		t.Fatalf("served %d pods, want %d", len(got.Items), servePods)
	}
	byName := map[string]corev1.Pod{}
	for _, p := range want.Items {
		byName[p.Name] = p
	}
	for _, p := range got.Items {
		w := byName[p.Name]
		// The cache keeps what the informer received; managedFields are
		// the factory's to keep or drop.
		p.ManagedFields, w.ManagedFields = nil, nil
		p.TypeMeta, w.TypeMeta = metav1.TypeMeta{}, metav1.TypeMeta{}
		if !equality.Semantic.DeepEqual(p, w) {
			t.Errorf("served pod %s differs from the apiserver's", p.Name)
		}
	}

	// In pages, as kubectl and client-go's pager list.
	var names []string
	opts := metav1.ListOptions{Limit: servePage}
	for {
		l, err := cs.CoreV1().Pods(ns).List(ctx, opts)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range l.Items {
			names = append(names, p.Name)
		}
		if opts.Continue = l.Continue; opts.Continue == "" {
			break
		}
	}
	if len(names) != servePods || !slices.IsSorted(names) {
		t.Errorf("pages gave %d pods, sorted %v", len(names), slices.IsSorted(names))
	}

	one := got.Items[7]
	if p, err := cs.CoreV1().Pods(ns).Get(ctx, one.Name, metav1.GetOptions{}); err != nil || p.ResourceVersion != one.ResourceVersion {
		t.Errorf("get %s: %v", one.Name, err)
	}

	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w, err := cs.CoreV1().Pods(ns).Watch(wctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for range servePods {
		if ev := <-w.ResultChan(); ev.Type != watch.Added {
			t.Fatalf("watch event %v", ev.Type)
		}
	}
	select {
	case ev := <-w.ResultChan():
		t.Errorf("event after the stored state: %v", ev.Type)
	case <-time.After(500 * time.Millisecond):
	}
	w.Stop()

	if err := cs.CoreV1().Pods(ns).Delete(ctx, one.Name, metav1.DeleteOptions{}); err == nil || !strings.Contains(err.Error(), "does not allow this method") {
		t.Errorf("delete: %v", err)
	}
}

// TestServeKubectl runs a real kubectl, built from the kubernetes release
// the apiserver is, against snapshot serve and against the apiserver the
// cache file came from: the same pods, by the same commands.
func TestServeKubectl(t *testing.T) {
	t.Parallel()
	ctx := needEnv(t)
	kubectl, err := kubebin.EnsureKubectl(ctx, kubebin.Options{})
	if err != nil {
		t.Fatalf("build kubectl: %v", err)
	}
	c, ns, s := servedFile(ctx, t)
	run := func(kubeconfig string, args ...string) (string, error) {
		cmd := exec.CommandContext(ctx, kubectl, append([]string{"--kubeconfig", kubeconfig}, args...)...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		if err != nil {
			return stdout.String() + stderr.String(), err
		}
		return stdout.String(), nil
	}
	same := func(args ...string) string {
		t.Helper()
		fromServe, err := run(s.kubeconfig, args...)
		if err != nil {
			t.Fatalf("kubectl %q against snapshot serve: %v\n%s\nserve: %s", args, err, fromServe, s.stderr.String())
		}
		fromCluster, err := run(c.kubeconfig, args...)
		if err != nil {
			t.Fatalf("kubectl %q against the apiserver: %v\n%s", args, err, fromCluster)
		}
		if fromServe != fromCluster {
			t.Errorf("kubectl %q: snapshot serve and the apiserver differ\n--- serve:\n%s\n--- apiserver:\n%s", args, head(fromServe), head(fromCluster))
		}
		return fromServe
	}
	// The objects, as kubectl prints them.
	same("get", "pods", "-n", ns, "-o", "yaml")
	same("get", "pods", "-n", ns, "-o", "json")
	same("get", "pods", "-n", ns, "-o", "name", "--sort-by", ".metadata.resourceVersion")
	same("get", "pods", "-n", ns, "-l", "tier=backend", "-o", "jsonpath={range .items[*]}{.metadata.name} {.spec.nodeName}{\"\\n\"}{end}")
	same("get", "pods", "-n", ns, "--field-selector", "spec.nodeName=node-0003", "-o", "name")
	same("get", "pods", "-n", ns, "-o", "custom-columns=NAME:.metadata.name,IP:.status.podIP", "--chunk-size", "7")
	// Tables: the server's columns (the AGE cells are times from now, read
	// apart: left out).
	for _, args := range [][]string{
		{"get", "pods", "-n", ns},
		{"get", "pods", "-n", ns, "-o", "wide"},
		{"get", "pods", "-n", ns, "-L", "tier", "--show-labels"},
	} {
		fromServe, err := run(s.kubeconfig, args...)
		if err != nil {
			t.Fatalf("kubectl %q: %v\n%s", args, err, fromServe)
		}
		fromCluster, err := run(c.kubeconfig, args...)
		if err != nil {
			t.Fatalf("kubectl %q against the apiserver: %v\n%s", args, err, fromCluster)
		}
		if a, b := withoutColumn(fromServe, "AGE"), withoutColumn(fromCluster, "AGE"); a != b {
			t.Errorf("kubectl %q: tables differ\n--- serve:\n%s\n--- apiserver:\n%s", args, head(a), head(b))
		}
	}
	// get all: the category's resources the file holds (pods alone here,
	// where the apiserver has more: kubectl names them without a kind).
	if out, err := run(s.kubeconfig, "get", "all", "-n", ns, "--no-headers"); err != nil || strings.Count(out, "\n") != servePods {
		t.Errorf("get all: %v, %d lines\n%s", err, strings.Count(out, "\n"), head(out))
	}
	out, err := run(s.kubeconfig, "api-resources")
	if err != nil || !strings.Contains(out, "pods") || !strings.Contains(out, "po") {
		t.Errorf("api-resources: %v\n%s", err, out)
	}
	name := "app-5-00000005-x7k2p"
	if out, err := run(s.kubeconfig, "describe", "pod", "-n", ns, name); err != nil || !strings.Contains(out, "Name:") || !strings.Contains(out, name) {
		t.Errorf("describe: %v\n%s", err, out)
	}
	if out, err := run(s.kubeconfig, "delete", "pod", "-n", ns, name); err == nil || !strings.Contains(out, "MethodNotAllowed") {
		t.Errorf("delete: %v\n%s", err, out)
	}
	if out, err := run(s.kubeconfig, "get", "pod", "-n", ns, "nope"); err == nil || !strings.Contains(out, `Error from server (NotFound): pods "nope" not found`) {
		t.Errorf("get of a missing pod: %v\n%s", err, out)
	}
	// get -w: the stored pods, and a watch that stays open.
	wctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	watchCmd := exec.CommandContext(wctx, kubectl, "--kubeconfig", s.kubeconfig, "get", "pods", "-n", ns, "-w", "--no-headers")
	out2, _ := watchCmd.Output()
	if wctx.Err() == nil {
		t.Errorf("kubectl get -w ended before it was stopped:\n%s", out2)
	}
	if n := strings.Count(string(out2), "\n"); n < servePods {
		t.Errorf("kubectl get -w printed %d lines, want at least %d", n, servePods)
	}
}

// withoutColumn removes the column named name from a kubectl table.
func withoutColumn(table, name string) string {
	lines := strings.Split(strings.TrimRight(table, "\n"), "\n")
	if len(lines) == 0 {
		return table
	}
	start := strings.Index(lines[0], name)
	if start < 0 {
		return table
	}
	end := start + len(name)
	for end < len(lines[0]) && lines[0][end] == ' ' {
		end++
	}
	var b strings.Builder
	for _, l := range lines {
		switch {
		case len(l) <= start:
			b.WriteString(l)
		case end >= len(l) || start == len(strings.TrimRight(lines[0], " "))-len(name):
			b.WriteString(strings.TrimRight(l[:start], " "))
		default:
			// The cell ends at the first space (an age has none); the
			// next cell starts after the padding, whose width depends
			// on the widest age.
			rest := l[start:]
			if i := strings.IndexByte(rest, ' '); i >= 0 {
				rest = strings.TrimLeft(rest[i:], " ")
			} else {
				rest = ""
			}
			b.WriteString(strings.TrimRight(l[:start], " ") + " " + rest)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// head is the first lines of s, for a failure message.
func head(s string) string {
	lines := strings.SplitN(s, "\n", 30)
	if len(lines) == 30 {
		lines[29] = "..."
	}
	return strings.Join(lines, "\n")
}
