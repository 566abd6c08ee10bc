package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"go.uber.org/goleak"

	"github.com/warmcache/warmcache/cmd/snapshot/internal/cli"
	"github.com/warmcache/warmcache/cmd/snapshot/internal/golden"
	"github.com/warmcache/warmcache/store/bolt"
	"github.com/warmcache/warmcache/store/codec"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// writeCache writes a cache file holding two pods, as an informer would.
func writeCache(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "cache.db")
	ctx := context.Background()
	db, err := bolt.Open(ctx, path, bolt.Options{Logger: klog.Background()})
	if err != nil {
		t.Fatal(err)
	}
	s, err := db.Resource(ctx, bolt.ResourceOptions{
		Identity: bolt.Identity{Version: "v1", Resource: "pods", Kind: "Pod"},
		Codec:    codec.Protobuf(nil),
		Indexers: cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"web-0", "web-1"} {
		if err := s.Add(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "web", Name: name, ResourceVersion: "7"}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestRun runs the in-process entry point: exit codes, and data on stdout
// with diagnostics on stderr.
func TestRun(t *testing.T) {
	path := writeCache(t)
	tests := []struct {
		args       []string
		wantCode   int
		wantStdout string
		wantStderr string
	}{
		{[]string{"list", path, "pods", "-n", "web", "-o", "name"}, cli.ExitOK, "pod/web-0\npod/web-1\n", ""},
		{[]string{"get", path, "pods", "web-2", "-n", "web"}, cli.ExitNotFound, "", `Error from cache file (NotFound): pods "web-2" not found`},
		{[]string{"info", filepath.Dir(path)}, cli.ExitUsage, "", "is a directory"},
		{[]string{"list", path, "pods", "-o", "xml"}, cli.ExitUsage, "", "allowed formats are table, wide, json, yaml, name"},
	}
	for _, tt := range tests {
		var stdout, stderr bytes.Buffer
		code := run(tt.args, &stdout, &stderr)
		if code != tt.wantCode || stdout.String() != tt.wantStdout || !strings.Contains(stderr.String(), tt.wantStderr) {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want %d, %q, %q", tt.args, code, stdout.String(), stderr.String(), tt.wantCode, tt.wantStdout, tt.wantStderr)
		}
	}
}

// TestHelp keeps the root help, with the exit codes, in a golden file.
func TestHelp(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"--help"}, &stdout, &stderr); code != cli.ExitOK {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	golden.Check(t, "help", stdout.Bytes())
	for _, cmd := range []string{"info", "list", "get", "index", "verify", "export", "diff", "compact", "backup"} {
		stdout.Reset()
		if code := run([]string{cmd, "--help"}, &stdout, &stderr); code != cli.ExitOK || !strings.Contains(stdout.String(), "Examples:\n  ") {
			t.Errorf("%s --help: exit %d, no examples:\n%s", cmd, code, stdout.String())
		}
	}
}

// TestBinary builds the real binary and runs it: exit codes reach the
// shell, stdout and stderr are separate, the file is not modified.
func TestBinary(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "snapshot")
	build := exec.Command("go", "build", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	path := writeCache(t)
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	fi, _ := os.Stat(path)
	tests := []struct {
		args       []string
		wantCode   int
		wantStdout string
		wantStderr string
	}{
		{[]string{"list", path, "po", "-n", "web"}, 0, "NAME    READY   STATUS   RESTARTS   AGE\nweb-0   0/0              0          <unknown>\nweb-1   0/0              0          <unknown>\n", ""},
		{[]string{"verify", path}, 0, path + ": no problems (1 resource, 2 objects decoded)\n", ""},
		{[]string{"list", path, "nope"}, cli.ExitNotFound, "", `error: resource "nope" not found`},
		{[]string{"info", path + ".missing"}, cli.ExitNotFound, "", "does not exist"},
		{[]string{"bogus"}, cli.ExitUsage, "", `unknown command "bogus"`},
	}
	for _, tt := range tests {
		cmd := exec.Command(bin, tt.args...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		code := 0
		var exitErr *exec.ExitError
		if errors.As(err, &exitErr) {
			code = exitErr.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if code != tt.wantCode || stdout.String() != tt.wantStdout || !strings.Contains(stderr.String(), tt.wantStderr) {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want %d, %q, %q", tt.args, code, stdout.String(), stderr.String(), tt.wantCode, tt.wantStdout, tt.wantStderr)
		}
	}
	after, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	fi2, _ := os.Stat(path)
	if !bytes.Equal(before, after) || !fi.ModTime().Equal(fi2.ModTime()) {
		t.Error("the binary modified the file it inspected")
	}
}
