package cli

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// FuzzOpen feeds arbitrary bytes to the file-opening path of the commands
// (open, validate, list resources, read objects, verify): every input must
// give a success or a documented exit code with an error message, never a
// panic, a crash or a hang. Inputs are bbolt files of tens of KB, which the
// fuzzer minimises slowly; bound that:
//
//	go test ./cmd/snapshot/internal/cli -run '^$' -fuzz FuzzOpen -fuzztime 2m -fuzzminimizetime 10x
func FuzzOpen(f *testing.F) {
	dir := f.TempDir()
	seed := func(name string) []byte {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		return b
	}
	small := filepath.Join(dir, "small.db")
	writeFixture(f, small, fixtureOptions{pods: 2, podsOnly: true})
	valid := seed(small)
	f.Add(valid)
	f.Add(valid[:len(valid)/2])
	// The two meta pages alone, of the page size the first records after
	// its 16-byte page header (magic, version, page size).
	f.Add(valid[:2*binary.LittleEndian.Uint32(valid[24:28])])
	f.Add([]byte{})
	f.Add([]byte("not a cache file"))
	f.Add(seed(writeForeign(f, dir)))
	allowed := []int{ExitOK, ExitNotFound, ExitCorrupt, ExitProblems}
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "fuzz.db")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		for _, args := range [][]string{
			{"info", path},
			{"list", path, "pods", "-A", "-o", "name"},
			{"index", path, "pods", "namespace"},
			{"verify", path},
		} {
			r := run(t, args...)
			if !slices.Contains(allowed, r.code) {
				t.Errorf("%q: exit %d, not one the input can cause: %s", args, r.code, r.stderr)
			}
			if r.code != ExitOK && r.code != ExitProblems && r.stderr == "" {
				t.Errorf("%q: exit %d without a message", args, r.code)
			}
		}
	})
}
