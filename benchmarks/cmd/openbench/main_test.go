package main

import (
	"path/filepath"
	"testing"

	"go.uber.org/goleak"

	"github.com/warmcache/warmcache/benchmarks/internal/cmdrun"
	"github.com/warmcache/warmcache/benchmarks/internal/cmdtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestRun(t *testing.T) {
	file := filepath.Join(t.TempDir(), "pods.db")
	cmdtest.Run(t, run, []cmdtest.Case{
		{
			Name:     "builds the file, then measures",
			Args:     []string{"-file", file, "-n", "50", "-runs", "2"},
			Code:     cmdrun.ExitOK,
			Stdout:   []string{"open", "resource", "background check", "    50"},
			StderrIn: "building",
		},
		{
			Name:   "measures an existing file",
			Args:   []string{"-file", file, "-n", "7", "-runs", "1"},
			Code:   cmdrun.ExitOK,
			Stdout: []string{"    50"},
		},
		{Name: "no file", Args: nil, Code: cmdrun.ExitUsage, StderrIn: "-file is required"},
		{Name: "zero runs", Args: []string{"-file", file, "-runs", "0"}, Code: cmdrun.ExitUsage, StderrIn: "must be positive"},
		{Name: "extra arguments", Args: []string{"-file", file, "extra"}, Code: cmdrun.ExitUsage, StderrIn: "unexpected arguments"},
		{Name: "directory missing", Args: []string{"-file", "/nonexistent/openbench/pods.db", "-n", "5"}, Code: cmdrun.ExitFail, StderrIn: "openbench:"},
	})
}
