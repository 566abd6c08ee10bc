package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A file whose state file says it was left unflushed across a restart of
// the machine is refused with exit 5 and a hint; --unsafe-ignore-state
// reads it anyway. Neither writes the file or its state file.
func TestUnflushedFile(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "cache.db")
	writeFixture(t, src, fixtureOptions{})
	state := []byte(`{"state":"open","boot":"a boot before the machine restarted","pid":1,"time":"2026-01-02T03:04:05Z"}` + "\n")
	if err := os.WriteFile(src+".state", state, 0o600); err != nil {
		t.Fatal(err)
	}
	unchanged(t, src)
	r := run(t, "info", src)
	if r.code != ExitCorrupt || !strings.Contains(r.stderr, "may be torn") || !strings.Contains(r.stderr, "--unsafe-ignore-state") {
		t.Fatalf("info of an unflushed file: exit %d, stderr:\n%s", r.code, r.stderr)
	}
	if r := run(t, "info", src, "--unsafe-ignore-state"); r.code != ExitOK || !strings.Contains(r.stdout, "Objects:") {
		t.Fatalf("info --unsafe-ignore-state: exit %d, stdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	if got, _ := os.ReadFile(src + ".state"); string(got) != string(state) {
		t.Fatalf("the state file changed: %s", got)
	}
}

// compact --force over a cache file removes that file's state file: it
// described the replaced file, not the copy.
func TestCompactForceDropsReplacedState(t *testing.T) {
	dir := t.TempDir()
	src, out := filepath.Join(dir, "cache.db"), filepath.Join(dir, "out.db")
	writeFixture(t, src, fixtureOptions{})
	writeFixture(t, out, fixtureOptions{})
	if err := os.WriteFile(out+".state", []byte(`{"state":"unflushed"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if r := run(t, "compact", src, "--output", out, "--force"); r.code != ExitOK {
		t.Fatalf("compact --force: exit %d: %s", r.code, r.stderr)
	}
	if _, err := os.Stat(out + ".state"); !os.IsNotExist(err) {
		t.Fatalf("state file of the replaced output: %v, want none", err)
	}
	if r := run(t, "info", out); r.code != ExitOK {
		t.Fatalf("info of the copy: exit %d: %s", r.code, r.stderr)
	}
}
