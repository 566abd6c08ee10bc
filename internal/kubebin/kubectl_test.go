package kubebin

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/mod/modfile"
)

// TestEnsureKubectl builds kubectl with the fake go tool: a module of its
// own with kubernetes' staging replaces, cmd/kubectl built with the
// version stamped, cached beside kube-apiserver and reused.
func TestEnsureKubectl(t *testing.T) {
	fake := newFakeGo(t, fakeGoOptions{})
	cache := t.TempDir()
	path, err := EnsureKubectl(t.Context(), Options{CacheDir: cache, GoCommand: fake.path})
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(cache, DefaultKubernetesVersion, KubectlName); path != want || !executable(path) {
		t.Fatalf("path %q (executable %v), want %q", path, executable(path), want)
	}
	data, err := os.ReadFile(filepath.Join(fake.recordDir, "kubectl.go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	f, err := modfile.Parse("kubectl", data, nil)
	if err != nil {
		t.Fatal(err)
	}
	if f.Module.Mod.Path != "kubebin.local/kubectl" || len(f.Require) != 1 || f.Require[0].Mod.String() != "k8s.io/kubernetes@v1.36.3" || len(f.Replace) != 3 {
		t.Errorf("kubectl go.mod:\n%s", data)
	}
	var build string
	for _, c := range fake.calls(t) {
		if strings.HasPrefix(c, "kubectl build ") {
			build = c
		}
	}
	for _, want := range []string{"-trimpath", "gitVersion=v1.36.3", " k8s.io/kubernetes/cmd/kubectl"} {
		if !strings.Contains(build, want) {
			t.Errorf("kubectl build %q lacks %q", build, want)
		}
	}
	// Cached: no second build; kube-apiserver and etcd untouched.
	if _, err := EnsureKubectl(t.Context(), Options{CacheDir: cache, GoCommand: fake.path}); err != nil {
		t.Fatal(err)
	}
	if b := fake.builds(t); !slices.Equal(b, []string{"kubectl"}) {
		t.Errorf("builds %v, want kubectl once", b)
	}
}
