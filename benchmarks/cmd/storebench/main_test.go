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
			Name: "small run",
			Args: []string{"-n", "120", "-impl", "client-go,bolt", "-batch", "50", "-get-samples", "20", "-index-samples", "2", "-dir", t.TempDir()},
			Code: cmdrun.ExitOK,
			Stdout: []string{
				"120 podgen pods", "bolt SyncOnClose",
				"client-go", "bolt/client-go",
				"heap bytes/pod", "add pods/s (batched, watch order)", "relist pods/s (Replace, key order)", "add CPU µs/pod", "GetByKey p50 µs", "Replace s",
				"bolt <= 0.05x client-go",
			},
		},
		{Name: "unknown implementation", Args: []string{"-impl", "client-go,redis"}, Code: cmdrun.ExitUsage, StderrIn: `flag -impl: "redis"`},
		{Name: "bad sync policy", Args: []string{"-bolt-sync", "sometimes"}, Code: cmdrun.ExitUsage, StderrIn: "-bolt-sync"},
		{Name: "zero pods", Args: []string{"-n", "0"}, Code: cmdrun.ExitUsage, StderrIn: "must be positive"},
		{Name: "unknown flag", Args: []string{"-x"}, Code: cmdrun.ExitUsage, StderrIn: "flag provided but not defined"},
		{Name: "extra arguments", Args: []string{"extra"}, Code: cmdrun.ExitUsage, StderrIn: "unexpected arguments"},
		{Name: "bolt directory missing", Args: []string{"-n", "10", "-impl", "bolt", "-dir", "/nonexistent/storebench"}, Code: cmdrun.ExitFail, StderrIn: "storebench:"},
	})
}
