package kubebin

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	"golang.org/x/mod/modfile"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// fakeGo is a stand-in for the go tool: "mod download -json" answers with
// the fixture go.mod, "build -o OUT" records the module's go.mod and writes
// a tiny executable to OUT. Every call is logged, one line each.
type fakeGo struct {
	path      string // the script
	log       string // one line per invocation: "<module dir base> <args>"
	recordDir string // <module dir base>.go.mod copies
}

// fakeGoOptions selects failures of the fake tool.
type fakeGoOptions struct {
	downloadError string // reported as the JSON Error of mod download
	buildError    string // build writes a partial output, prints this, fails
}

func newFakeGo(t *testing.T, o fakeGoOptions) *fakeGo {
	t.Helper()
	dir := t.TempDir()
	fixture, err := filepath.Abs(filepath.Join("testdata", "kubernetes.go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeGo{path: filepath.Join(dir, "go"), log: filepath.Join(dir, "calls.log"), recordDir: filepath.Join(dir, "record")}
	if err := os.Mkdir(f.recordDir, 0o755); err != nil {
		t.Fatal(err)
	}
	script := fmt.Sprintf(`#!/bin/sh
echo "$(basename "$PWD") $*" >> %[1]q
case "$1 $2" in
"mod download")
	if [ -n %[3]q ]; then
		printf '{"Path":"k8s.io/kubernetes","Error":"%%s"}\n' %[3]q
		exit 1
	fi
	printf '{"Path":"k8s.io/kubernetes","Version":"v1.36.3","GoMod":"%%s"}\n' %[2]q
	exit 0;;
esac
if [ "$1" = build ]; then
	out=""; prev=""
	for a in "$@"; do [ "$prev" = "-o" ] && out="$a"; prev="$a"; done
	cp go.mod %[5]q/"$(basename "$PWD")".go.mod
	if [ -n %[4]q ]; then
		echo partial > "$out"
		echo "compile error: "%[4]q >&2
		exit 2
	fi
	printf '#!/bin/sh\necho built\n' > "$out"
	chmod +x "$out"
	exit 0
fi
echo "fake go: unexpected $*" >&2
exit 3
`, f.log, fixture, o.downloadError, o.buildError, f.recordDir)
	if err := os.WriteFile(f.path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return f
}

// calls returns the logged invocations.
func (f *fakeGo) calls(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile(f.log)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSpace(string(data)), "\n")
}

// builds returns the module directories (kube-apiserver, etcd) built.
func (f *fakeGo) builds(t *testing.T) []string {
	var mods []string
	for _, c := range f.calls(t) {
		if mod, args, _ := strings.Cut(c, " "); strings.HasPrefix(args, "build ") {
			mods = append(mods, mod)
		}
	}
	slices.Sort(mods)
	return mods
}

func TestEnsureBuildsOnceAndReuses(t *testing.T) {
	fake := newFakeGo(t, fakeGoOptions{})
	cache := t.TempDir()
	opts := Options{CacheDir: cache, GoCommand: fake.path}
	want := Paths{
		KubeAPIServer: filepath.Join(cache, DefaultKubernetesVersion, KubeAPIServerName),
		Etcd:          filepath.Join(cache, DefaultKubernetesVersion, EtcdName),
	}

	const callers = 4
	var wg sync.WaitGroup
	results := make([]Paths, callers)
	errs := make([]error, callers)
	for i := range callers {
		wg.Go(func() { results[i], errs[i] = Ensure(t.Context(), opts) })
	}
	wg.Wait()
	for i := range callers {
		if errs[i] != nil || results[i] != want {
			t.Fatalf("caller %d: Ensure = %+v, %v; want %+v", i, results[i], errs[i], want)
		}
	}
	if got := fake.builds(t); !slices.Equal(got, []string{"etcd", "kube-apiserver"}) {
		t.Fatalf("%d concurrent callers built %v, want each binary once", callers, got)
	}
	for _, p := range []string{want.KubeAPIServer, want.Etcd} {
		out, err := exec.Command(p).Output()
		if err != nil || string(out) != "built\n" {
			t.Errorf("%s: output %q, %v; want the built program", p, out, err)
		}
	}

	t.Run("cached binaries need no go tool", func(t *testing.T) {
		calls := len(fake.calls(t))
		got, err := Ensure(t.Context(), Options{CacheDir: cache, GoCommand: filepath.Join(t.TempDir(), "no-go")})
		if err != nil || got != want {
			t.Fatalf("Ensure = %+v, %v; want %+v", got, err, want)
		}
		if n := len(fake.calls(t)); n != calls {
			t.Errorf("go tool ran %d more times", n-calls)
		}
	})

	t.Run("a non-executable binary is rebuilt", func(t *testing.T) {
		if err := os.Chmod(want.Etcd, 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := Ensure(t.Context(), opts); err != nil {
			t.Fatal(err)
		}
		if got := fake.builds(t); !slices.Equal(got, []string{"etcd", "etcd", "kube-apiserver"}) {
			t.Errorf("builds = %v, want etcd rebuilt only", got)
		}
		if !executable(want.Etcd) {
			t.Errorf("%s not executable after rebuild", want.Etcd)
		}
	})
}

func TestEnsureGeneratesModules(t *testing.T) {
	fake := newFakeGo(t, fakeGoOptions{})
	if _, err := Ensure(t.Context(), Options{CacheDir: t.TempDir(), GoCommand: fake.path}); err != nil {
		t.Fatal(err)
	}
	read := func(name string) *modfile.File {
		t.Helper()
		data, err := os.ReadFile(filepath.Join(fake.recordDir, name+".go.mod"))
		if err != nil {
			t.Fatal(err)
		}
		f, err := modfile.Parse(name, data, nil)
		if err != nil {
			t.Fatalf("generated go.mod of %s: %v\n%s", name, err, data)
		}
		return f
	}

	api := read("kube-apiserver")
	if api.Go == nil || api.Go.Version != "1.26.0" {
		t.Errorf("kube-apiserver go directive = %v, want kubernetes' 1.26.0", api.Go)
	}
	if len(api.Godebug) != 1 || api.Godebug[0].Key != "default" || api.Godebug[0].Value != "go1.26" {
		t.Errorf("kube-apiserver godebug = %v, want kubernetes' default=go1.26", api.Godebug)
	}
	if len(api.Require) != 1 || api.Require[0].Mod.String() != "k8s.io/kubernetes@v1.36.3" {
		t.Errorf("kube-apiserver requires %v, want k8s.io/kubernetes@v1.36.3", api.Require)
	}
	var replaces []string
	for _, r := range api.Replace {
		replaces = append(replaces, r.Old.String()+" => "+r.New.String())
	}
	wantReplaces := []string{
		"k8s.io/api => k8s.io/api@v0.36.3",
		"k8s.io/apiserver => k8s.io/apiserver@v0.36.3",
		"k8s.io/client-go => k8s.io/client-go@v0.36.3",
	}
	if !slices.Equal(replaces, wantReplaces) {
		t.Errorf("kube-apiserver replaces = %v, want %v (staging modules only)", replaces, wantReplaces)
	}

	etcd := read("etcd")
	if len(etcd.Require) != 1 || etcd.Require[0].Mod.String() != "go.etcd.io/etcd/server/v3@v3.6.8" {
		t.Errorf("etcd requires %v, want the go.etcd.io/etcd/server/v3@v3.6.8 kubernetes requires", etcd.Require)
	}

	var apiBuild string
	for _, c := range fake.calls(t) {
		if strings.HasPrefix(c, "kube-apiserver build ") {
			apiBuild = c
		}
	}
	for _, want := range []string{"-mod=mod", "-trimpath", "k8s.io/component-base/version.gitVersion=v1.36.3", "gitMinor=36", " k8s.io/kubernetes/cmd/kube-apiserver"} {
		if !strings.Contains(apiBuild, want) {
			t.Errorf("kube-apiserver build %q lacks %q", apiBuild, want)
		}
	}
}

func TestEnsureFailures(t *testing.T) {
	tests := []struct {
		name     string
		fake     fakeGoOptions
		wantText string
	}{
		{"build fails", fakeGoOptions{buildError: "undefined: frobnicate"}, "compile error: undefined: frobnicate"},
		{"download fails", fakeGoOptions{downloadError: "unknown revision v1.36.3"}, "unknown revision v1.36.3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := newFakeGo(t, tt.fake)
			cache := t.TempDir()
			_, err := Ensure(t.Context(), Options{CacheDir: cache, GoCommand: fake.path})
			if !errors.Is(err, ErrGoCommand) || !strings.Contains(err.Error(), tt.wantText) {
				t.Fatalf("Ensure error = %v; want ErrGoCommand carrying %q", err, tt.wantText)
			}
			left, err := os.ReadDir(filepath.Join(cache, DefaultKubernetesVersion))
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range left {
				if e.Name() != lockName {
					t.Errorf("failed build left %s in the cache", e.Name())
				}
			}
		})
	}
}

func TestEnsureWaitsForLockUntilCancelled(t *testing.T) {
	fake := newFakeGo(t, fakeGoOptions{})
	cache := t.TempDir()
	dir := filepath.Join(cache, DefaultKubernetesVersion)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	unlock, err := lockFile(t.Context(), filepath.Join(dir, lockName))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	_, err = Ensure(ctx, Options{CacheDir: cache, GoCommand: fake.path})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Ensure while another builder holds the lock = %v, want DeadlineExceeded", err)
	}
	if calls := fake.calls(t); len(calls) != 0 {
		t.Errorf("go tool ran without the lock: %v", calls)
	}
	unlock()
	if _, err := Ensure(t.Context(), Options{CacheDir: cache, GoCommand: fake.path}); err != nil {
		t.Errorf("Ensure after the lock is released: %v", err)
	}
}

func TestOptions(t *testing.T) {
	t.Run("invalid versions", func(t *testing.T) {
		for _, v := range []string{"1.36.3", "v2.0.0", "v1.36", "v1.36.3-rc.1", "v1.36.3+build", "latest"} {
			if _, err := Ensure(t.Context(), Options{KubernetesVersion: v, CacheDir: t.TempDir()}); !errors.Is(err, ErrInvalidOptions) {
				t.Errorf("KubernetesVersion %q: error %v, want ErrInvalidOptions", v, err)
			}
		}
	})
	t.Run("cache directory from the environment", func(t *testing.T) {
		root := t.TempDir()
		t.Setenv(CacheDirEnv, root)
		dir := filepath.Join(root, "v1.35.0")
		want := Paths{KubeAPIServer: filepath.Join(dir, KubeAPIServerName), Etcd: filepath.Join(dir, EtcdName)}
		for _, p := range []string{want.KubeAPIServer, want.Etcd} {
			writeExecutable(t, p)
		}
		got, err := Ensure(t.Context(), Options{KubernetesVersion: "v1.35.0", GoCommand: filepath.Join(root, "no-go")})
		if err != nil || got != want {
			t.Errorf("Ensure = %+v, %v; want %+v", got, err, want)
		}
	})
	t.Run("missing go tool", func(t *testing.T) {
		_, err := Ensure(t.Context(), Options{CacheDir: t.TempDir(), GoCommand: filepath.Join(t.TempDir(), "no-go")})
		if !errors.Is(err, ErrGoCommand) {
			t.Errorf("error %v, want ErrGoCommand", err)
		}
	})
}

func TestParseKubernetesModFile(t *testing.T) {
	fixture, err := os.ReadFile(filepath.Join("testdata", "kubernetes.go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := parseKubernetesModFile("fixture", fixture)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"k8s.io/api", "k8s.io/apiserver", "k8s.io/client-go"}; !slices.Equal(m.staging, want) {
		t.Errorf("staging = %v, want %v", m.staging, want)
	}
	if m.etcdVersion != "v3.6.8" || m.goVersion != "1.26.0" {
		t.Errorf("etcd %q go %q, want v3.6.8 and 1.26.0", m.etcdVersion, m.goVersion)
	}

	drop := func(substr string) []byte {
		var kept []string
		for _, l := range strings.Split(string(fixture), "\n") {
			if !strings.Contains(l, substr) {
				kept = append(kept, l)
			}
		}
		return []byte(strings.Join(kept, "\n"))
	}
	tests := []struct {
		name string
		data []byte
	}{
		{"no staging replaces", drop("./staging/")},
		{"no etcd server", drop(etcdServerModule)},
		{"no go directive", drop("go 1.26.0")},
		{"not a go.mod", []byte("module {\n")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := parseKubernetesModFile(tt.name, tt.data); !errors.Is(err, ErrModule) {
				t.Errorf("error %v, want ErrModule", err)
			}
		})
	}
}

// TestEnsureReal builds (or reuses) the real binaries and checks they are
// the versions asked for.
func TestEnsureReal(t *testing.T) {
	if testing.Short() {
		t.Skip("builds kube-apiserver and etcd from the module proxy when not cached (minutes); runs without -short (make test)")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Minute)
	defer cancel()
	paths, err := Ensure(ctx, Options{})
	if err != nil {
		t.Fatalf("Ensure: %v", err)
	}
	for _, tt := range []struct{ bin, want string }{
		{paths.KubeAPIServer, "Kubernetes " + DefaultKubernetesVersion},
		{paths.Etcd, "etcd Version: 3.6.8"},
	} {
		out, err := exec.CommandContext(ctx, tt.bin, "--version").CombinedOutput()
		if err != nil || !strings.Contains(string(out), tt.want) {
			t.Errorf("%s --version = %q, %v; want %q", tt.bin, out, err, tt.want)
		}
	}
}

func writeExecutable(t *testing.T, path string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
}
