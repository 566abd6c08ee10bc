package main

import (
	"bytes"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/warmcache/warmcache/benchmarks/internal/scalebench"
)

func TestMain(m *testing.M) {
	// The program starts itself again as its server and informers; so
	// does its test.
	scalebench.MaybeRun()
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
			name:   "small run",
			args:   []string{"-n", "150", "-updates", "10", "-memlimit", "512MiB", "-dir", t.TempDir()},
			code:   exitOK,
			stdout: []string{"peak RssAnon MiB", "warm-replay", "warm-no-handler", "relist", "server alone: 150 pods", "512", "command: go run ./benchmarks/cmd/scalebench -n 150"},
		},
		{name: "nothing", args: []string{"-n", "0"}, code: exitUsage, stderrIn: "nothing to measure"},
		{name: "bad cgroup limit", args: []string{"-cgroup-limit", "lots"}, code: exitUsage, stderrIn: "-cgroup-limit"},
		{name: "bad memlimit", args: []string{"-memlimit", "1PB"}, code: exitUsage, stderrIn: "-memlimit"},
		{name: "relist beyond 100", args: []string{"-relist", "101"}, code: exitUsage, stderrIn: "-relist"},
		{name: "extra arguments", args: []string{"more"}, code: exitUsage, stderrIn: "unexpected arguments"},
		{name: "missing directory", args: []string{"-n", "5", "-dir", "/nonexistent/scalebench"}, code: exitFail, stderrIn: "scalebench:"},
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

func TestParseBytes(t *testing.T) {
	for in, want := range map[string]int64{"1GiB": 1 << 30, "1.5GiB": 3 << 29, "512MiB": 512 << 20, "4096": 4096, "8KiB": 8192} {
		if got, err := parseBytes(in); err != nil || got != want {
			t.Errorf("parseBytes(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "-1GiB", "1TB", "GiB"} {
		if _, err := parseBytes(in); err == nil {
			t.Errorf("parseBytes(%q) succeeded", in)
		}
	}
}
