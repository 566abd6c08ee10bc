package main

import (
	"bytes"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/warmcache/warmcache/benchmarks/internal/apiproc"
)

func TestMain(m *testing.M) {
	// The program starts itself again as its API server; so does its test.
	apiproc.MaybeServe()
	goleak.VerifyTestMain(m)
}

func TestRun(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		code     int
		stdout   []string
		stderrIn string
	}{
		{
			name: "small run",
			args: []string{"-n", "80", "-updates", "30", "-impl", "client-go,bolt", "-dir", t.TempDir()},
			code: exitOK,
			stdout: []string{
				"80 podgen pods over HTTP (application/vnd.kubernetes.protobuf), 30 updates",
				"bolt/client-go", "cold sync s", "cold sync CPU s", "steady heap bytes/pod", "update events/s", "update CPU µs/event",
				"bolt <= 0.05x client-go", "bolt <= 0.30x client-go", "bolt >= 0.80x client-go",
				"client-go cold sync: 0 lists, 1 watches (1 WatchList)",
			},
		},
		{
			name:   "json",
			args:   []string{"-n", "20", "-updates", "5", "-impl", "memory", "-encoding", "json", "-dir", t.TempDir()},
			code:   exitOK,
			stdout: []string{"(application/json)"},
		},
		{name: "unknown implementation", args: []string{"-impl", "bolt,etcd"}, code: exitUsage, stderrIn: `-impl "etcd"`},
		{name: "bad encoding", args: []string{"-encoding", "xml"}, code: exitUsage, stderrIn: "-encoding"},
		{name: "bad sync policy", args: []string{"-bolt-sync", "never"}, code: exitUsage, stderrIn: "-bolt-sync"},
		{name: "negative updates", args: []string{"-updates", "-1"}, code: exitUsage, stderrIn: "not negative"},
		{name: "extra arguments", args: []string{"more"}, code: exitUsage, stderrIn: "unexpected arguments"},
		{name: "missing directory", args: []string{"-n", "5", "-impl", "bolt", "-dir", "/nonexistent/informerbench"}, code: exitFail, stderrIn: "informerbench:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := run(tt.args, &stdout, &stderr); code != tt.code {
				t.Fatalf("exit %d, want %d; stderr:\n%s", code, tt.code, stderr.String())
			}
			for _, want := range tt.stdout {
				if !strings.Contains(stdout.String(), want) {
					t.Errorf("stdout lacks %q:\n%s", want, stdout.String())
				}
			}
			if !strings.Contains(stderr.String(), tt.stderrIn) {
				t.Errorf("stderr lacks %q:\n%s", tt.stderrIn, stderr.String())
			}
			if tt.code != exitOK && stdout.Len() != 0 {
				t.Errorf("a failed run wrote to stdout:\n%s", stdout.String())
			}
		})
	}
}
