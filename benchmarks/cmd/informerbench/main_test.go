package main

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/warmcache/warmcache/benchmarks/internal/apiproc"
	"github.com/warmcache/warmcache/benchmarks/internal/cmdrun"
	"github.com/warmcache/warmcache/benchmarks/internal/cmdtest"
)

func TestMain(m *testing.M) {
	// The program starts itself again as its API server; so does its test.
	apiproc.MaybeServe()
	goleak.VerifyTestMain(m)
}

func TestRun(t *testing.T) {
	cmdtest.Run(t, run, []cmdtest.Case{
		{
			Name: "small run",
			Args: []string{"-n", "80", "-updates", "30", "-impl", "client-go,bolt", "-dir", t.TempDir()},
			Code: cmdrun.ExitOK,
			Stdout: []string{
				"80 podgen pods over HTTP (application/vnd.kubernetes.protobuf) from genserver, 30 updates",
				"bolt/client-go", "cold sync s", "cold sync CPU s", "steady heap bytes/pod", "update events/s", "update CPU µs/event",
				"bolt <= 0.05x client-go", "bolt <= 0.30x client-go", "bolt >= 1.00x client-go", "bolt <= 0.80x client-go", "bolt <= 1.30x client-go",
				"client-go cold sync: 0 lists, 1 watches (1 WatchList)",
				"cold sync server CPU s", "update GC cycles", "update allocated KB/event",
				"server alone: initial events/s", "whole churn: update CPU µs/event", "update events measured (whole GC periods)", "server alone: update server CPU µs/event", "server alone: its streams read",
			},
		},
		{
			Name:   "json",
			Args:   []string{"-n", "20", "-updates", "5", "-impl", "memory", "-encoding", "json", "-dir", t.TempDir()},
			Code:   cmdrun.ExitOK,
			Stdout: []string{"(application/json)", "server alone: update events/s"},
		},
		{
			Name:   "bolt GOGC",
			Args:   []string{"-n", "40", "-updates", "10", "-impl", "client-go,bolt", "-relist=", "-skip-server-alone", "-bolt-gogc", "400", "-dir", t.TempDir()},
			Code:   cmdrun.ExitOK,
			Stdout: []string{"bolt measured with GOGC=400"},
		},
		{
			Name:   "genserver",
			Args:   []string{"-n", "60", "-updates", "20", "-impl", "client-go,bolt", "-server", "genserver", "-dir", t.TempDir()},
			Code:   cmdrun.ExitOK,
			Stdout: []string{"60 podgen pods over HTTP (application/vnd.kubernetes.protobuf) from genserver", "410 relist, 100% changed s", "server alone: update events/s"},
		},
		{
			Name:   "page size",
			Args:   []string{"-n", "20", "-updates", "5", "-impl", "bolt", "-bolt-page-size", "16384", "-relist=", "-skip-server-alone", "-dir", t.TempDir()},
			Code:   cmdrun.ExitOK,
			Stdout: []string{"update events/s", "bolt SyncOnClose, page size 16384", "-bolt-page-size 16384", "file MB after cold sync", "file MB after the churn"},
		},
		{Name: "unknown server", Args: []string{"-server", "etcd"}, Code: cmdrun.ExitUsage, StderrIn: "-server"},
		{Name: "unknown implementation", Args: []string{"-impl", "bolt,etcd"}, Code: cmdrun.ExitUsage, StderrIn: `-impl "etcd"`},
		{Name: "bad encoding", Args: []string{"-encoding", "xml"}, Code: cmdrun.ExitUsage, StderrIn: "-encoding"},
		{Name: "bad sync policy", Args: []string{"-bolt-sync", "never"}, Code: cmdrun.ExitUsage, StderrIn: "-bolt-sync"},
		{Name: "bad page size", Args: []string{"-bolt-page-size", "3000"}, Code: cmdrun.ExitUsage, StderrIn: "-bolt-page-size"},
		{Name: "negative updates", Args: []string{"-updates", "-1"}, Code: cmdrun.ExitUsage, StderrIn: "not negative"},
		{Name: "extra arguments", Args: []string{"more"}, Code: cmdrun.ExitUsage, StderrIn: "unexpected arguments"},
		{Name: "missing directory", Args: []string{"-n", "5", "-impl", "bolt", "-dir", "/nonexistent/informerbench"}, Code: cmdrun.ExitFail, StderrIn: "informerbench:"},
	})
}
