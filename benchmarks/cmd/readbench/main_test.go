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
			Name: "small run with 4 KiB pages",
			Args: []string{"-n", "300", "-impl", "client-go,bolt", "-reps", "1", "-gets", "20", "-reconciles", "5", "-bolt-page-size", "4096", "-dir", t.TempDir()},
			Code: cmdrun.ExitOK,
			Stdout: []string{
				"reads of 300 podgen pods", "bolt's page size 4096",
				"bolt/client-go", "GetByKey uniform p50 µs", "reconcile reads",
			},
		},
		{
			Name: "the factory's listers",
			Args: []string{"-n", "200", "-impl", "client-go,factory", "-reps", "1", "-gets", "20", "-reconciles", "5", "-dir", t.TempDir()},
			Code: cmdrun.ExitOK,
			Stdout: []string{
				"factory/client-go", "warmcache lister Pods(ns-007).List(", "f.Core().V1().Pods().Lister()",
			},
		},
		{
			Name: "a hot tier that holds every pod",
			Args: []string{"-n", "200", "-impl", "client-go,bolt-hot,factory-hot", "-reps", "1", "-gets", "20", "-reconciles", "5", "-dir", t.TempDir()},
			Code: cmdrun.ExitOK,
			Stdout: []string{
				"bolt-hot/client-go", "factory-hot/client-go", "bolt-hot <= 5.00x client-go", "with a hot tier of 3 MiB",
			},
		},
		{Name: "negative hot tier", Args: []string{"-hot-bytes", "-1"}, Code: cmdrun.ExitUsage, StderrIn: "-hot-bytes not negative"},
		{Name: "default page size", Args: []string{"-n", "50", "-impl", "bolt", "-reps", "1", "-gets", "5", "-reconciles", "1", "-dir", t.TempDir()}, Code: cmdrun.ExitOK, Stdout: []string{"bolt's default page size"}},
		{Name: "page size not a power of two", Args: []string{"-bolt-page-size", "3000"}, Code: cmdrun.ExitUsage, StderrIn: "page size 3000"},
		{Name: "unknown implementation", Args: []string{"-impl", "client-go,redis"}, Code: cmdrun.ExitUsage, StderrIn: `flag -impl: "redis"`},
		{Name: "zero pods", Args: []string{"-n", "0"}, Code: cmdrun.ExitUsage, StderrIn: "must be positive"},
		{Name: "extra arguments", Args: []string{"extra"}, Code: cmdrun.ExitUsage, StderrIn: "unexpected arguments"},
	})
}
