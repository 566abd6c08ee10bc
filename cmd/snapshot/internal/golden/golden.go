// Package golden compares test output with files under testdata/.
//
// Importing it registers the -update test flag, with which Check rewrites
// the golden files instead of comparing:
//
//	go test ./cmd/snapshot/... -update
//
// Every test package of the snapshot CLI imports it, so that the flag is
// known to all of them.
package golden

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/ with the current output")

// Check compares got with testdata/<name>.golden, or writes that file when
// the -update flag is set. A difference fails the test with both texts and
// the first differing line.
func Check(t testing.TB, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run the tests with -update to create it)", err)
	}
	if bytes.Equal(got, want) {
		return
	}
	gl, wl := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
	line := 0
	for line < len(gl) && line < len(wl) && gl[line] == wl[line] {
		line++
	}
	t.Errorf("output differs from %s at line %d (run with -update if the change is intended)\n--- got:\n%s\n--- want:\n%s", path, line+1, got, want)
}
