package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/warmcache/warmcache/internal/kubebin"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func TestRun(t *testing.T) {
	cached := t.TempDir()
	dir := filepath.Join(cached, kubebin.DefaultKubernetesVersion)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{kubebin.KubeAPIServerName, kubebin.EtcdName} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name       string
		args       []string
		noGo       bool // PATH without a go tool
		wantCode   int
		wantStdout string
		wantStderr string
	}{
		{
			name:       "cached binaries",
			args:       []string{"-cache-dir", cached},
			noGo:       true,
			wantCode:   exitOK,
			wantStdout: "KUBE_APISERVER=" + filepath.Join(dir, kubebin.KubeAPIServerName) + "\nETCD=" + filepath.Join(dir, kubebin.EtcdName) + "\n",
		},
		{name: "unknown flag", args: []string{"-frobnicate"}, wantCode: exitUsage, wantStderr: "flag provided but not defined"},
		{name: "stray argument", args: []string{"-cache-dir", cached, "extra"}, wantCode: exitUsage, wantStderr: "unexpected arguments"},
		{name: "bad version", args: []string{"-kubernetes-version", "1.36", "-cache-dir", cached}, wantCode: exitUsage, wantStderr: "invalid options"},
		{name: "no go tool", args: []string{"-q", "-cache-dir", t.TempDir()}, noGo: true, wantCode: exitBuild, wantStderr: "go command failed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.noGo {
				t.Setenv("PATH", t.TempDir())
			}
			var stdout, stderr bytes.Buffer
			code := run(t.Context(), tt.args, &stdout, &stderr)
			if code != tt.wantCode || stdout.String() != tt.wantStdout || !strings.Contains(stderr.String(), tt.wantStderr) {
				t.Errorf("run(%q) = %d, stdout %q, stderr %q; want %d, %q, stderr containing %q",
					tt.args, code, stdout.String(), stderr.String(), tt.wantCode, tt.wantStdout, tt.wantStderr)
			}
		})
	}
}
