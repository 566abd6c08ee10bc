package bolt

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWriteTransactionsHoldTheGate keeps the premise of the mapping's page
// release (package mapped): bbolt remaps the file only inside a write
// transaction, and every write transaction of this package starts in
// runUpdate, which db.update and Close call with the write gate held. A
// write transaction begun anywhere else could remap under a release.
func TestWriteTransactionsHoldTheGate(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, call := range []string{"Begin(true)", ".Update(", ".Batch("} {
			n := strings.Count(string(src), call)
			if f == "freelist.go" && call == "Begin(true)" {
				n-- // runUpdate's own
			}
			if n > 0 {
				t.Errorf("%s: %d write transaction(s) begun with %s outside runUpdate, which the mapping's page release does not see (see package mapped)", f, n, call)
			}
		}
	}
}
