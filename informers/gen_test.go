package informers

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The checked-in group, version and typed informer accessors are what the
// generator writes from the client-go version go.mod requires.
func TestGeneratedAccessorsAreCurrent(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the generator (go run); runs without -short (make test)")
	}
	dir := t.TempDir()
	cmd := exec.Command("go", "run", "./internal/gen", "-out", dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("generator: %v\n%s", err, out)
	}
	want := generatedFiles(t, dir)
	have := generatedFiles(t, ".")
	groups := 0
	for _, src := range want {
		groups += strings.Count(src, "\nfunc (f *Factory) ")
	}
	if groups < 15 {
		t.Fatalf("the generator wrote %d group accessors; client-go's factory has more groups", groups)
	}
	for name, w := range want {
		if h, ok := have[name]; !ok || h != w {
			t.Errorf("%s is not what the generator writes: run go generate ./informers", name)
		}
	}
	for name := range have {
		if _, ok := want[name]; !ok {
			t.Errorf("%s is not written by the generator any more: remove it (go generate ./informers)", name)
		}
	}
}

// generatedFiles reads the generated files of dir, by name.
func generatedFiles(t *testing.T, dir string) map[string]string {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "zz_generated*.go"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err != nil {
			t.Fatal(err)
		}
		out[filepath.Base(n)] = string(b)
	}
	return out
}
