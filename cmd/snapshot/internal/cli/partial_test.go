package cli

import (
	"context"
	"encoding/binary"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	bbolt "go.etcd.io/bbolt"

	"github.com/warmcache/warmcache/internal/podgen"
)

// damagedFile is a fixture of 600 pods (more than a scan chunk) whose
// items 1, 300 and 599 do not decode.
func damagedFile(t *testing.T) (path string, badKeys []string) {
	t.Helper()
	path = filepath.Join(t.TempDir(), "damaged.db")
	writeFixture(t, path, fixtureOptions{pods: 600, podsOnly: true})
	for _, i := range []int{1, 300, 599} {
		p := podgen.Pod(i)
		badKeys = append(badKeys, p.Namespace+"/"+p.Name)
	}
	keys := badKeys
	mutate(t, path, func(tx *bbolt.Tx) error {
		for _, k := range keys {
			if err := setEnvelope(t, tx, podsID, k, []byte("\x94\xa11\xa1u\xc4\x03abc")); err != nil {
				return err
			}
		}
		return nil
	})
	return path, badKeys
}

// TestDamagedFileGivesEveryReadableObject checks that list, export and
// sorted lists print every object that can be read, then the keys that
// cannot on stderr, and exit with ExitCorrupt.
func TestDamagedFileGivesEveryReadableObject(t *testing.T) {
	path, bad := damagedFile(t)
	unchanged(t, path)
	for _, tt := range []struct {
		name string
		args []string
		// lines is the number of stdout lines wanted, each holding an
		// object.
		count func(stdout string) int
	}{
		{"list names", []string{"list", path, "pods", "-A", "-o", "name"}, func(s string) int { return strings.Count(s, "pod/") }},
		{"list table", []string{"list", path, "pods", "-A", "--no-headers"}, func(s string) int { return strings.Count(s, "\n") }},
		{"list one namespace", []string{"list", path, "pods", "-n", "ns-001", "-o", "name"}, func(s string) int { return strings.Count(s, "pod/") }},
		{"list sorted", []string{"list", path, "pods", "-A", "-o", "name", "--sort-by", ".metadata.name"}, func(s string) int { return strings.Count(s, "pod/") }},
		{"list json", []string{"list", path, "pods", "-A", "-o", "json"}, func(s string) int { return strings.Count(s, `"kind": "Pod"`) }},
		{"export", []string{"export", path, "pods"}, func(s string) int { return strings.Count(s, "kind: Pod") }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := run(t, tt.args...)
			if r.code != ExitCorrupt {
				t.Errorf("exit %d, want %d; stderr:\n%s", r.code, ExitCorrupt, r.stderr)
			}
			want := 597
			if tt.name == "list one namespace" {
				want = 0
				for i := range 600 {
					if p := podgen.Pod(i); p.Namespace == "ns-001" && !slices.Contains(bad, p.Namespace+"/"+p.Name) {
						want++
					}
				}
			}
			if got := tt.count(r.stdout); got != want {
				t.Errorf("%d objects printed, want %d", got, want)
			}
			for _, k := range bad {
				if tt.name == "list one namespace" && !strings.HasPrefix(k, "ns-001/") {
					continue
				}
				if !strings.Contains(r.stderr, "  pods "+k+"\n") {
					t.Errorf("stderr does not list %s:\n%s", k, r.stderr)
				}
				if strings.Contains(r.stdout, strings.SplitN(k, "/", 2)[1]+"\n") {
					t.Errorf("stdout holds the damaged %s", k)
				}
			}
			if !strings.Contains(r.stderr, "could not be read") || !strings.Contains(r.stderr, "error: ") {
				t.Errorf("stderr does not report the damage:\n%s", r.stderr)
			}
		})
	}
}

// TestUnreadableMetadataIsCorruptNotMissing checks that a resource whose
// metadata cannot be read is reported as damage (exit 5), not as a
// resource the file does not hold.
func TestUnreadableMetadataIsCorruptNotMissing(t *testing.T) {
	path := fixture(t, fixtureOptions{podsOnly: true})
	mutate(t, path, func(tx *bbolt.Tx) error {
		return tx.Bucket([]byte(podsID.String())).Put([]byte("meta"), []byte("garbage"))
	})
	unchanged(t, path)
	r := run(t, "list", path, "pods", "-A")
	if r.code != ExitCorrupt || !strings.Contains(r.stderr, "metadata of 1 resources is unreadable") {
		t.Errorf("exit %d, stderr:\n%s", r.code, r.stderr)
	}
	// info prints what it can, then reports the damage.
	r = run(t, "info", path)
	if r.code != ExitCorrupt || !strings.Contains(r.stdout, "(unreadable)") || !strings.Contains(r.stderr, "the metadata of 1 resources is unreadable") {
		t.Errorf("info: exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
}

// TestInterruptedExitCode checks that a command whose context is
// cancelled (Ctrl-C) exits with 130, as a shell reports SIGINT.
func TestInterruptedExitCode(t *testing.T) {
	path := fixture(t, fixtureOptions{podsOnly: true})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var stdout, stderr strings.Builder
	code := Run(ctx, Env{Stdout: &stdout, Stderr: &stderr}, []string{"list", path, "pods", "-A"})
	if code != ExitInterrupted || !strings.Contains(stderr.String(), "error: interrupted") {
		t.Errorf("exit %d, stderr %q; want %d and \"interrupted\"", code, stderr.String(), ExitInterrupted)
	}
}

// TestErrorNamesPathOnce checks that an error about FILE names it once.
func TestErrorNamesPathOnce(t *testing.T) {
	path := filepath.Join(fixture(t, fixtureOptions{podsOnly: true}), "x.db")
	r := run(t, "list", path, "pods")
	if n := strings.Count(r.stderr, path); n != 1 {
		t.Errorf("stderr names %s %d times:\n%s", path, n, r.stderr)
	}
}

// TestVerifyReportsDamagedMetaPage checks that verify reports a meta page
// bbolt silently replaces by the other one.
func TestVerifyReportsDamagedMetaPage(t *testing.T) {
	path := fixture(t, fixtureOptions{podsOnly: true})
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	// The page size the file records in its first meta page (after the
	// 16-byte page header: magic, version, page size).
	b := make([]byte, 28)
	if _, err := f.ReadAt(b, 0); err != nil {
		t.Fatal(err)
	}
	pageSize := int64(binary.LittleEndian.Uint32(b[24:]))
	// A byte of meta page 1's root bucket sequence, which its checksum
	// covers; the page header stays intact (a torn write).
	b = make([]byte, 1)
	if _, err := f.ReadAt(b, pageSize+16+24); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0xff
	if _, err := f.WriteAt(b, pageSize+16+24); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	unchanged(t, path)
	r := run(t, "verify", path)
	if r.code != ExitProblems || !strings.Contains(r.stdout, "bbolt meta page 1 is damaged (checksum mismatch): the file is read through meta page 0") {
		t.Errorf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
}

// TestListWarnsIncompleteCache checks that list says on stderr when the
// cache is not a complete picture of the server, and still lists it.
func TestListWarnsIncompleteCache(t *testing.T) {
	for _, tt := range []struct {
		name string
		meta map[string]interface{}
		want string
	}{
		{"never listed", map[string]interface{}{"state": "new", "rv": ""}, "warning: pods was never listed into this file"},
		{"relist interrupted", map[string]interface{}{"staging": 9}, "warning: a relist of pods was interrupted"},
		{"incomplete", map[string]interface{}{"state": "incomplete", "reason": "scan: 1 objects could not be decoded"},
			"warning: pods is incomplete in this file (scan: 1 objects could not be decoded)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path := fixture(t, fixtureOptions{podsOnly: true})
			mutate(t, path, func(tx *bbolt.Tx) error { return editMeta(t, tx, podsID, tt.meta) })
			unchanged(t, path)
			for _, args := range [][]string{{"list", path, "pods", "-A", "-o", "name"}, {"list", path, "pods", "-n", "nowhere"}} {
				r := run(t, args...)
				if r.code != ExitOK || !strings.Contains(r.stderr, tt.want) {
					t.Errorf("%q: exit %d, stderr %q; want a warning %q", args, r.code, r.stderr, tt.want)
				}
			}
		})
	}
	// A complete cache gets no warning.
	path := fixture(t, fixtureOptions{podsOnly: true})
	if r := run(t, "list", path, "pods", "-A"); r.code != ExitOK || strings.Contains(r.stderr, "warning") {
		t.Errorf("complete cache: exit %d, stderr %q", r.code, r.stderr)
	}
}

// TestNamespacePicksScope checks that -n picks, among several scopes of a
// resource, the one recorded for that namespace, and that completion
// offers the ID of each scope.
func TestNamespacePicksScope(t *testing.T) {
	path := twoScopesFile(t, t.TempDir())
	unchanged(t, path)
	r := run(t, "list", path, "pods", "-n", "ns-001", "-o", "name")
	if r.code != ExitOK || r.stdout != "pod/scoped\n" {
		t.Errorf("list -n ns-001: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	r = run(t, "get", path, "pod/scoped", "-n", "ns-001", "-o", "name")
	if r.code != ExitOK || r.stdout != "pod/scoped\n" {
		t.Errorf("get -n ns-001: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	// The ambiguity's hint quotes the IDs for the shell.
	r = run(t, "list", path, "pods", "-A")
	if r.code != ExitUsage || !strings.Contains(r.stderr, "'res;g=;v=v1;r=pods;k=Pod;ns=ns-001;l=;f=;s='") || !strings.Contains(r.stderr, "-n NAMESPACE") {
		t.Errorf("ambiguity: exit %d, stderr %q", r.code, r.stderr)
	}
	r = run(t, "__complete", "list", path, "")
	if !strings.Contains(r.stdout, "res;g=;v=v1;r=pods;k=Pod;ns=ns-001;l=;f=;s=\n") {
		t.Errorf("completion does not offer the scoped ID:\n%s", r.stdout)
	}
}
