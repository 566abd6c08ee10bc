package main

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/warmcache/warmcache/benchmarks/internal/cmdrun"
	"github.com/warmcache/warmcache/benchmarks/internal/cmdtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestRun(t *testing.T) {
	cmdtest.Run(t, run, []cmdtest.Case{
		{
			Name:   "small run",
			Args:   []string{"-n", "200", "-runs", "1", "-dir", t.TempDir()},
			Code:   cmdrun.ExitOK,
			Stdout: []string{"file: 200 pods", "run 1: read-write Open alone", "beside a reader"},
		},
		{Name: "zero pods", Args: []string{"-n", "0"}, Code: cmdrun.ExitUsage, StderrIn: "must be positive"},
		{Name: "extra arguments", Args: []string{"extra"}, Code: cmdrun.ExitUsage, StderrIn: "unexpected arguments"},
		{Name: "unknown flag", Args: []string{"-x"}, Code: cmdrun.ExitUsage, StderrIn: "flag provided but not defined"},
		{Name: "directory missing", Args: []string{"-n", "5", "-dir", "/nonexistent/lockbench"}, Code: cmdrun.ExitFail, StderrIn: "lockbench:"},
	})
}
