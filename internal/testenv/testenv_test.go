package testenv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/warmcache/warmcache/internal/kubebin"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// testTimeout covers a cold build of the binaries (minutes) plus the test.
const testTimeout = 20 * time.Minute

// needProcesses skips under -short: these tests start etcd and
// kube-apiserver, and the first run builds them.
func needProcesses(t *testing.T) context.Context {
	t.Helper()
	if testing.Short() {
		t.Skip("starts etcd and kube-apiserver (the first run builds them, minutes); runs without -short (make test)")
	}
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	t.Cleanup(cancel)
	return ctx
}

func startEnv(ctx context.Context, t *testing.T, opts Options) (*Env, kubernetes.Interface) {
	t.Helper()
	env, err := Start(ctx, t, opts)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	cs, err := kubernetes.NewForConfig(env.RestConfig())
	if err != nil {
		t.Fatalf("client: %v", err)
	}
	return env, cs
}

func TestEnv(t *testing.T) {
	ctx := needProcesses(t)
	env, cs := startEnv(ctx, t, Options{})
	const ns = "testenv"
	want := []string{"cm-0", "cm-1", "cm-2"}

	listNames := func(t *testing.T) []string {
		t.Helper()
		list, err := cs.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatalf("list configmaps: %v", err)
		}
		var names []string
		for _, cm := range list.Items {
			names = append(names, cm.Name)
		}
		slices.Sort(names)
		return names
	}

	t.Run("create and list", func(t *testing.T) {
		if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create namespace: %v", err)
		}
		for _, name := range want {
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"k": name}}
			if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
				t.Fatalf("create %s: %v", name, err)
			}
		}
		if got := listNames(t); !slices.Equal(got, want) {
			t.Errorf("configmaps = %v, want %v", got, want)
		}
	})

	t.Run("list requests are counted", func(t *testing.T) {
		before, err := env.ListRequests(ctx, "configmaps")
		if err != nil {
			t.Fatal(err)
		}
		const lists = 3
		for range lists {
			listNames(t)
		}
		after, err := env.ListRequests(ctx, "configmaps")
		if err != nil {
			t.Fatal(err)
		}
		if after-before != lists {
			t.Errorf("LIST configmaps counter went from %v to %v, want +%d", before, after, lists)
		}
		secrets, err := env.MetricSum(ctx, "apiserver_request_total", map[string]string{"verb": "LIST", "resource": "no-such-resource"})
		if err != nil || secrets != 0 {
			t.Errorf("LIST counter of an unknown resource = %v, %v; want 0, nil", secrets, err)
		}
		// The audit log counts the same requests, by namespace.
		for _, tc := range []struct {
			f    RequestFilter
			want int
		}{
			{RequestFilter{Verb: "list", Resource: "configmaps", Namespace: ns}, 1 + lists}, // the create subtest's list too
			{RequestFilter{Verb: "list", Resource: "configmaps", Namespace: "other"}, 0},
			{RequestFilter{Verb: "watch", Resource: "configmaps", Namespace: ns}, 0},
		} {
			if got, err := env.Requests(ctx, tc.f); err != nil || got != tc.want {
				t.Errorf("Requests(%+v) = %d, %v; want %d", tc.f, got, err, tc.want)
			}
		}
	})

	t.Run("restart apiserver", func(t *testing.T) {
		_, apiserver, err := env.processes()
		if err != nil {
			t.Fatal(err)
		}
		if err := env.RestartAPIServer(ctx); err != nil {
			t.Fatalf("RestartAPIServer: %v", err)
		}
		_, restarted, err := env.processes()
		if err != nil {
			t.Fatal(err)
		}
		if restarted.pid == apiserver.pid || !apiserver.exited() {
			t.Errorf("apiserver pid %d still running after restart (new pid %d)", apiserver.pid, restarted.pid)
		}
		// The same client (same port, same CA) keeps working.
		if got := listNames(t); !slices.Equal(got, want) {
			t.Errorf("configmaps after restart = %v, want %v", got, want)
		}
	})

	t.Run("stop leaves no process", func(t *testing.T) {
		etcd, apiserver, err := env.processes()
		if err != nil {
			t.Fatal(err)
		}
		env.Stop()
		for _, p := range []*process{etcd, apiserver} {
			if err := syscall.Kill(p.pid, 0); !errors.Is(err, syscall.ESRCH) {
				t.Errorf("%s pid %d after Stop: kill(0) = %v, want ESRCH", p.name, p.pid, err)
			}
		}
		if pids := processesUsing(t, env.Dir()); len(pids) != 0 {
			t.Errorf("processes still using %s after Stop: %v", env.Dir(), pids)
		}
		if _, err := env.Metrics(ctx); !errors.Is(err, ErrStopped) {
			t.Errorf("Metrics after Stop = %v, want ErrStopped", err)
		}
		if err := env.RestartAPIServer(ctx); !errors.Is(err, ErrStopped) {
			t.Errorf("RestartAPIServer after Stop = %v, want ErrStopped", err)
		}
		if _, err := env.SaveEtcdData(ctx); !errors.Is(err, ErrStopped) {
			t.Errorf("SaveEtcdData after Stop = %v, want ErrStopped", err)
		}
		if err := env.RestartWithEtcdData(ctx, ""); !errors.Is(err, ErrStopped) {
			t.Errorf("RestartWithEtcdData after Stop = %v, want ErrStopped", err)
		}
		env.Stop() // idempotent
	})
}

// TestCompactExpiresOldResourceVersions runs without the watch cache, so
// watches reach etcd: before Compact an old RV is watchable, after it the
// watch ends with 410.
func TestCompactExpiresOldResourceVersions(t *testing.T) {
	ctx := needProcesses(t)
	env, cs := startEnv(ctx, t, Options{ExtraAPIServerArgs: []string{"--watch-cache=false"}})
	cms := cs.CoreV1().ConfigMaps(metav1.NamespaceDefault)
	create := func(name string) string {
		t.Helper()
		cm, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create %s: %v", name, err)
		}
		return cm.ResourceVersion
	}
	// firstEvent opens a watch from rv and returns its first event.
	firstEvent := func(rv string) watch.Event {
		t.Helper()
		w, err := cms.Watch(ctx, metav1.ListOptions{ResourceVersion: rv})
		if err != nil {
			t.Fatalf("watch from %s: %v", rv, err)
		}
		defer w.Stop()
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatalf("watch from %s closed without an event", rv)
			}
			return ev
		case <-ctx.Done():
			t.Fatalf("watch from %s: no event: %v", rv, ctx.Err())
		}
		return watch.Event{}
	}

	oldRV := create("old")
	create("newer")
	if ev := firstEvent(oldRV); ev.Type != watch.Added || ev.Object.(*corev1.ConfigMap).Name != "newer" {
		t.Fatalf("before Compact, watch from %s: first event %s %#v, want ADDED newer", oldRV, ev.Type, ev.Object)
	}

	rev, err := env.Compact(ctx)
	if err != nil {
		t.Fatalf("Compact: %v", err)
	}
	if old := mustAtoi(t, oldRV); rev <= old {
		t.Errorf("Compact returned revision %d, want beyond %d", rev, old)
	}
	ev := firstEvent(oldRV)
	if ev.Type != watch.Error {
		t.Fatalf("after Compact, watch from %s: first event %s, want ERROR", oldRV, ev.Type)
	}
	if err := apierrors.FromObject(ev.Object); !apierrors.IsResourceExpired(err) && !apierrors.IsGone(err) {
		t.Errorf("after Compact, watch from %s: %v, want 410 Expired/Gone", oldRV, err)
	}

	again, err := env.Compact(ctx)
	if err != nil || again <= rev {
		t.Errorf("second Compact = %d, %v; want a revision beyond %d", again, err, rev)
	}
}

// TestStartFailures covers failures that need no running process, or a
// process that exits at once; each must be reported, never skipped.
func TestStartFailures(t *testing.T) {
	okBins := kubebin.Paths{KubeAPIServer: "/bin/true", Etcd: "/bin/true"}
	tests := []struct {
		name string
		opts Options
		want error
	}{
		{"half the binaries", Options{Binaries: kubebin.Paths{Etcd: "/bin/true"}}, ErrInvalidOptions},
		{"argument without dashes", Options{Binaries: okBins, ExtraAPIServerArgs: []string{"watch-cache=false"}}, ErrInvalidOptions},
		{"negative timeout", Options{Binaries: okBins, StartTimeout: -time.Second}, ErrInvalidOptions},
		{"missing directory", Options{Binaries: okBins, Dir: filepath.Join(t.TempDir(), "absent")}, ErrInvalidOptions},
		{"build fails", Options{Kubebin: kubebin.Options{CacheDir: t.TempDir(), GoCommand: filepath.Join(t.TempDir(), "no-go")}}, kubebin.ErrGoCommand},
		{"etcd exits at once", Options{Binaries: okBins, StartTimeout: 10 * time.Second}, ErrStart},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env, err := Start(t.Context(), t, tt.opts)
			if !errors.Is(err, tt.want) || env != nil {
				t.Fatalf("Start = %v, %v; want error %v", env, err, tt.want)
			}
			if errors.Is(tt.want, kubebin.ErrGoCommand) && !errors.Is(err, ErrBinaries) {
				t.Errorf("build failure %v does not wrap ErrBinaries", err)
			}
		})
	}
}

func TestStartFailsLoudlyOnBadFlag(t *testing.T) {
	ctx := needProcesses(t)
	dir := t.TempDir()
	env, err := Start(ctx, t, Options{Dir: dir, ExtraAPIServerArgs: []string{"--no-such-flag=1"}})
	if !errors.Is(err, ErrStart) || env != nil {
		t.Fatalf("Start = %v, %v; want ErrStart", env, err)
	}
	if !strings.Contains(err.Error(), "unknown flag: --no-such-flag") {
		t.Errorf("error does not carry the apiserver's log tail: %v", err)
	}
	if pids := processesUsing(t, dir); len(pids) != 0 {
		t.Errorf("processes left running after a failed Start: %v", pids)
	}
}

// fakeTB records what Start does with its testing.TB.
type fakeTB struct {
	testing.TB // nil: any method not below panics
	dir        string
	failed     bool
	logs       []string
	cleanups   []func()
}

func (f *fakeTB) Helper()                      {}
func (f *fakeTB) TempDir() string              { return f.dir }
func (f *fakeTB) Failed() bool                 { return f.failed }
func (f *fakeTB) Cleanup(fn func())            { f.cleanups = append(f.cleanups, fn) }
func (f *fakeTB) Logf(format string, a ...any) { f.logs = append(f.logs, fmt.Sprintf(format, a...)) }

func (f *fakeTB) runCleanups() {
	for i := len(f.cleanups) - 1; i >= 0; i-- {
		f.cleanups[i]()
	}
}

func TestCleanupOnFailedTest(t *testing.T) {
	ctx := needProcesses(t)
	tb := &fakeTB{dir: t.TempDir()}
	env, err := Start(ctx, tb, Options{})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(env.Stop) // in case the assertions below fail first
	etcd, apiserver, err := env.processes()
	if err != nil {
		t.Fatal(err)
	}
	tb.failed = true
	tb.runCleanups()

	if !etcd.exited() || !apiserver.exited() {
		t.Errorf("processes still running after the test's cleanup: etcd %v, apiserver %v", !etcd.exited(), !apiserver.exited())
	}
	if pids := processesUsing(t, tb.dir); len(pids) != 0 {
		t.Errorf("processes still using %s: %v", tb.dir, pids)
	}
	logs := strings.Join(tb.logs, "\n")
	wants := []string{"tail of " + logFile(tb.dir, etcdName), "tail of " + logFile(tb.dir, apiserverName)}
	for _, name := range []string{etcdName, apiserverName} {
		data, err := os.ReadFile(logFile(tb.dir, name))
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(string(data)), "\n")
		wants = append(wants, lines[len(lines)-1])
	}
	for _, want := range wants {
		if !strings.Contains(logs, want) {
			t.Errorf("failed test's log lacks %q", want)
		}
	}
}

// processesUsing returns the pids of processes whose command line mentions
// dir (every etcd and kube-apiserver of an Env does).
func processesUsing(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Skipf("no /proc to look for leaked processes: %v", err)
	}
	var pids []string
	for _, e := range entries {
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.Contains(string(cmdline), dir) {
			pids = append(pids, e.Name())
		}
	}
	return pids
}

func mustAtoi(t *testing.T, s string) int64 {
	t.Helper()
	var n int64
	if _, err := fmt.Sscan(s, &n); err != nil {
		t.Fatalf("resourceVersion %q: %v", s, err)
	}
	return n
}
