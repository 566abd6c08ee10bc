package main

import (
	"bytes"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

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
			args: []string{"-n", "120", "-impl", "client-go,bolt", "-batch", "50", "-get-samples", "20", "-index-samples", "2", "-dir", t.TempDir()},
			code: exitOK,
			stdout: []string{
				"120 podgen pods", "bolt SyncOnClose",
				"client-go", "bolt/client-go",
				"heap bytes/pod", "add pods/s (batched, watch order)", "relist pods/s (Replace, key order)", "add CPU µs/pod", "GetByKey p50 µs", "Replace s",
				"bolt <= 0.05x client-go",
			},
		},
		{name: "unknown implementation", args: []string{"-impl", "client-go,redis"}, code: exitUsage, stderrIn: `-impl "redis"`},
		{name: "bad sync policy", args: []string{"-bolt-sync", "sometimes"}, code: exitUsage, stderrIn: "-bolt-sync"},
		{name: "zero pods", args: []string{"-n", "0"}, code: exitUsage, stderrIn: "must be positive"},
		{name: "unknown flag", args: []string{"-x"}, code: exitUsage, stderrIn: "flag provided but not defined"},
		{name: "extra arguments", args: []string{"extra"}, code: exitUsage, stderrIn: "unexpected arguments"},
		{name: "bolt directory missing", args: []string{"-n", "10", "-impl", "bolt", "-dir", "/nonexistent/storebench"}, code: exitFail, stderrIn: "storebench:"},
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
