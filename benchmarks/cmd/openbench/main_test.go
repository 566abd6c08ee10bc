package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestRun(t *testing.T) {
	file := filepath.Join(t.TempDir(), "pods.db")
	tests := []struct {
		name     string
		args     []string
		code     int
		stdout   []string
		stderrIn string
	}{
		{
			name:     "builds the file, then measures",
			args:     []string{"-file", file, "-n", "50", "-runs", "2"},
			code:     exitOK,
			stdout:   []string{"open", "resource", "background check", "    50"},
			stderrIn: "building",
		},
		{
			name:   "measures an existing file",
			args:   []string{"-file", file, "-n", "7", "-runs", "1"},
			code:   exitOK,
			stdout: []string{"    50"},
		},
		{name: "no file", args: nil, code: exitUsage, stderrIn: "-file is required"},
		{name: "zero runs", args: []string{"-file", file, "-runs", "0"}, code: exitUsage, stderrIn: "must be positive"},
		{name: "extra arguments", args: []string{"-file", file, "extra"}, code: exitUsage, stderrIn: "unexpected arguments"},
		{name: "directory missing", args: []string{"-file", "/nonexistent/openbench/pods.db", "-n", "5"}, code: exitFail, stderrIn: "openbench:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := run(tt.args, &stdout, &stderr); code != tt.code {
				t.Fatalf("exit %d, want %d; stderr: %s", code, tt.code, stderr.String())
			}
			for _, want := range tt.stdout {
				if !strings.Contains(stdout.String(), want) {
					t.Errorf("stdout lacks %q:\n%s", want, stdout.String())
				}
			}
			if !strings.Contains(stderr.String(), tt.stderrIn) {
				t.Errorf("stderr lacks %q:\n%s", tt.stderrIn, stderr.String())
			}
		})
	}
}
