package cli

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/warmcache/warmcache/store/bolt"
)

// completions runs cobra's hidden completion command and returns the
// candidates (the last line is the directive).
func completions(t *testing.T, args ...string) []string {
	t.Helper()
	r := run(t, append([]string{"__complete"}, args...)...)
	if r.code != ExitOK {
		t.Fatalf("__complete %q: exit %d: %s", args, r.code, r.stderr)
	}
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	var out []string
	for _, l := range lines[:len(lines)-1] {
		name, _, _ := strings.Cut(l, "\t")
		out = append(out, name)
	}
	return out
}

func TestCompletion(t *testing.T) {
	path := fixture(t, fixtureOptions{})
	unchanged(t, path)
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"commands", []string{"l"}, []string{"list"}},
		{"resources", []string{"list", path, ""}, []string{"deployments.apps", "nodes", "pods", "widgets.example.com"}},
		{"resources with a prefix", []string{"export", path, "p"}, []string{"pods"}},
		{"names in a namespace", []string{"get", path, "pods", "-n", "ns-002", ""}, []string{"app-2-00000002-x7k2p"}},
		{"cluster-scoped names", []string{"get", path, "nodes", ""}, []string{"node-0000", "node-0001"}},
		{"index names", []string{"index", path, "pods", ""}, []string{"namespace", "nodeName"}},
		{"index values", []string{"index", path, "pods", "nodeName", "node-000"}, []string{"node-0000", "node-0001", "node-0002", "node-0003", "node-0004", "node-0005"}},
		{"output formats", []string{"list", path, "pods", "-o", ""}, []string{"table", "wide", "json", "yaml", "name", "jsonpath=", "custom-columns=", "go-template="}},
		{"export formats", []string{"export", path, "pods", "-o", ""}, []string{"yaml", "json"}},
		{"namespaces", []string{"list", path, "deploy", "-n", ""}, []string{"ns-000", "ns-001"}},
		{"diff resources", []string{"diff", path, path, "w"}, []string{"widgets.example.com"}},
		{"unknown resource", []string{"get", path, "foos", ""}, nil},
		{"missing file", []string{"list", path + ".missing", ""}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := completions(t, tt.args...); !slices.Equal(got, tt.want) {
				t.Errorf("completions %q, want %q", got, tt.want)
			}
		})
	}
}

// TestCompletionOnLockedFileReturns checks that completing on a file held
// by a running process gives nothing instead of hanging the shell.
func TestCompletionOnLockedFileReturns(t *testing.T) {
	path := fixture(t, fixtureOptions{})
	db, err := bolt.Open(context.Background(), path, bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	if got := completions(t, "list", path, "--lock-timeout", "10s", ""); got != nil {
		t.Errorf("completions %q on a locked file", got)
	}
}

func TestShellScripts(t *testing.T) {
	for _, shell := range []string{"bash", "zsh", "fish", "powershell"} {
		r := run(t, "completion", shell)
		if r.code != ExitOK || !strings.Contains(r.stdout, "snapshot") {
			t.Errorf("completion %s: exit %d, %d bytes", shell, r.code, len(r.stdout))
		}
	}
}
