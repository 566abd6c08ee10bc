package main

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/warmcache/warmcache/benchmarks/internal/cmdrun"
	"github.com/warmcache/warmcache/benchmarks/internal/cmdtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestFlags(t *testing.T) {
	cmdtest.Run(t, run, []cmdtest.Case{
		{Name: "zero runs", Args: []string{"-runs", "0"}, Code: cmdrun.ExitUsage, StderrIn: "must be positive"},
		{Name: "no pods", Args: []string{"-pods", "0"}, Code: cmdrun.ExitUsage, StderrIn: "must be positive"},
		{Name: "change out of range", Args: []string{"-change", "1.5"}, Code: cmdrun.ExitUsage, StderrIn: "-change"},
		{Name: "extra arguments", Args: []string{"extra"}, Code: cmdrun.ExitUsage, StderrIn: "unexpected arguments"},
	})
}

// TestRun measures one round against a real kube-apiserver: pods just over
// a page (the watch's catch-up), a few ConfigMaps (checked whole).
func TestRun(t *testing.T) {
	if testing.Short() {
		t.Skip("starts kube-apiserver and etcd; runs without -short (make test)")
	}
	cmdtest.Run(t, run, []cmdtest.Case{{
		Name: "one round",
		Args: []string{"-pods", "510", "-configmaps", "3", "-runs", "1", "-dir", t.TempDir()},
		Code: cmdrun.ExitOK,
		Stdout: []string{"510 pods, 3 ConfigMaps, 1 runs", "warm, idle ConfigMaps (3: checked whole)",
			"warm, idle pods (510", "warm, pods with 5 changed while down", "client-go, pods (LIST)"},
		StderrIn: "run 1:",
	}})
}
