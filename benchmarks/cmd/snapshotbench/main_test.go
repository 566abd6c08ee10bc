package main

import (
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/warmcache/warmcache/benchmarks/internal/cmdrun"
	"github.com/warmcache/warmcache/benchmarks/internal/cmdtest"
)

func TestMain(m *testing.M) {
	// The test binary is the program its runs start as their kubectl
	// child (os.Executable).
	if os.Getenv(childEnv) != "" {
		os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
	}
	goleak.VerifyTestMain(m)
}

func TestRun(t *testing.T) {
	dir := t.TempDir()
	cmdtest.Run(t, run, []cmdtest.Case{
		{
			Name: "small run beside kubectl's printers",
			Args: []string{"-n", "300", "-kubectl-n", "300", "-runs", "1", "-dir", dir, "-idle-wait", "0"},
			Code: cmdrun.ExitOK,
			Stdout: []string{
				"snapshot table", "snapshot yaml", "snapshot export", "snapshot sort", "kubectl printer -o yaml",
				"others' CPU s (min-max)", "runs: wall s [others' CPU s", "  snapshot sort, 300 pods: ", "100%, -]",
				"-o json at 300 pods: snapshot's output and kubectl's printer's are identical",
				"-o yaml at 300 pods: snapshot's output and kubectl's printer's are identical",
			},
		},
		{Name: "unknown case", Args: []string{"-cases", "table,xml"}, Code: cmdrun.ExitUsage, StderrIn: `"xml"`},
		{Name: "zero runs", Args: []string{"-runs", "0"}, Code: cmdrun.ExitUsage, StderrIn: "must be positive"},
		{Name: "negative idle wait", Args: []string{"-idle-wait", "-1s"}, Code: cmdrun.ExitUsage, StderrIn: "-idle-wait"},
		{Name: "bad child", Args: []string{"-kubectl-child", "xml"}, Code: cmdrun.ExitUsage, StderrIn: "-kubectl-child"},
		{Name: "extra arguments", Args: []string{"extra"}, Code: cmdrun.ExitUsage, StderrIn: "unexpected arguments"},
	})
}
