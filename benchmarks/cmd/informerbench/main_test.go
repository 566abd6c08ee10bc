package main

import (
	"errors"
	"io"
	"testing"

	"go.uber.org/goleak"

	"github.com/warmcache/warmcache/benchmarks/internal/apiproc"
	"github.com/warmcache/warmcache/benchmarks/internal/cmdrun"
	"github.com/warmcache/warmcache/benchmarks/internal/cmdtest"
	"github.com/warmcache/warmcache/benchmarks/internal/kubeserver"
)

func TestMain(m *testing.M) {
	// The program starts itself again as its API server; so does its test.
	apiproc.MaybeServe()
	kubeserver.MaybeServe()
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
			Name:   "bolt replay headroom",
			Args:   []string{"-n", "40", "-updates", "10", "-impl", "bolt", "-relist=", "-skip-server-alone", "-bolt-replay-headroom", "0", "-dir", t.TempDir()},
			Code:   cmdrun.ExitOK,
			Stdout: []string{"bolt replays with bolt.Options.ReplayHeadroom 0 MiB", "-bolt-replay-headroom 0"},
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
		{
			Name: "hot set",
			Args: []string{"-n", "40", "-updates", "30", "-churn-hot", "4", "-impl", "client-go,bolt", "-relist", "10", "-dir", t.TempDir()},
			Code: cmdrun.ExitOK,
			Stdout: []string{
				"40 podgen pods over HTTP (application/vnd.kubernetes.protobuf) from genserver, 30 updates over a hot set of 4 pods,",
				"update events/s, hot set of 4 pods", "update CPU µs/event, hot set of 4 pods", "whole churn: update events/s, hot set of 4 pods",
				"server alone: update events/s, hot set of 4 pods", "server alone: initial events/s",
				"churn: the 30 updates cycle over a hot set of 4 pods spread over the namespaces (-churn-hot), each updated about 8 times; the 410 relists change pods spread over all", "410 relist, 10% changed s", "-churn-hot 4",
			},
		},
		{Name: "negative hot set", Args: []string{"-churn-hot", "-1"}, Code: cmdrun.ExitUsage, StderrIn: "-churn-hot -1"},
		{Name: "hot set above the pods", Args: []string{"-n", "10", "-churn-hot", "11"}, Code: cmdrun.ExitUsage, StderrIn: "-churn-hot 11"},
		{Name: "no churn workers", Args: []string{"-server", "kube-apiserver", "-churn-workers", "0"}, Code: cmdrun.ExitUsage, StderrIn: "-churn-workers"},
		{Name: "unknown server", Args: []string{"-server", "etcd"}, Code: cmdrun.ExitUsage, StderrIn: "-server"},
		{Name: "unknown implementation", Args: []string{"-impl", "bolt,etcd"}, Code: cmdrun.ExitUsage, StderrIn: `flag -impl: "etcd"`},
		{Name: "bad encoding", Args: []string{"-encoding", "xml"}, Code: cmdrun.ExitUsage, StderrIn: "-encoding"},
		{Name: "bad sync policy", Args: []string{"-bolt-sync", "never"}, Code: cmdrun.ExitUsage, StderrIn: "-bolt-sync"},
		{Name: "bad replay headroom", Args: []string{"-bolt-replay-headroom", "-2"}, Code: cmdrun.ExitUsage, StderrIn: "-bolt-replay-headroom -2"},
		{Name: "bad page size", Args: []string{"-bolt-page-size", "3000"}, Code: cmdrun.ExitUsage, StderrIn: "-bolt-page-size"},
		{Name: "negative updates", Args: []string{"-updates", "-1"}, Code: cmdrun.ExitUsage, StderrIn: "not negative"},
		{Name: "extra arguments", Args: []string{"more"}, Code: cmdrun.ExitUsage, StderrIn: "unexpected arguments"},
		{Name: "missing directory", Args: []string{"-n", "5", "-impl", "bolt", "-dir", "/nonexistent/informerbench"}, Code: cmdrun.ExitFail, StderrIn: "informerbench:"},
	})
}

func TestParseChurnHot(t *testing.T) {
	for _, c := range []struct {
		args []string
		want int
		ok   bool
	}{
		{nil, 0, true},
		{[]string{"-churn-hot", "0"}, 0, true},
		{[]string{"-churn-hot", "100"}, 100, true},
		{[]string{"-n", "50", "-churn-hot", "50"}, 50, true},
		{[]string{"-churn-hot", "-1"}, 0, false},
		{[]string{"-n", "50", "-churn-hot", "51"}, 0, false},
		{[]string{"-churn-hot", "many"}, 0, false},
	} {
		o, err := parse(c.args, io.Discard)
		if !c.ok {
			if !errors.Is(err, cmdrun.ErrUsage) {
				t.Errorf("parse(%q): %v, want a usage error", c.args, err)
			}
			continue
		}
		if err != nil || o.churnHot != c.want {
			t.Errorf("parse(%q): -churn-hot %d, %v; want %d", c.args, o.churnHot, err, c.want)
		}
	}
}

// -batch-size and -queue-capacity reach the informers' options; negative
// values are usage errors.
func TestParseBatchSizeAndQueueCapacity(t *testing.T) {
	o, err := parse([]string{"-batch-size", "2000", "-queue-capacity", "1000"}, io.Discard)
	if err != nil || o.batchSize != 2000 || o.queueCap != 1000 {
		t.Fatalf("parse: batch %d, capacity %d, %v; want 2000, 1000", o.batchSize, o.queueCap, err)
	}
	if o, err := parse(nil, io.Discard); err != nil || o.batchSize != 0 || o.queueCap != 0 {
		t.Fatalf("parse(nil): batch %d, capacity %d, %v; want the informer's defaults (0)", o.batchSize, o.queueCap, err)
	}
	for _, args := range [][]string{{"-batch-size", "-1"}, {"-queue-capacity", "-5"}, {"-rounds", "0"}} {
		if _, err := parse(args, io.Discard); !errors.Is(err, cmdrun.ErrUsage) {
			t.Errorf("parse(%q): %v, want a usage error", args, err)
		}
	}
}

// A tiny run of two rounds against one real kube-apiserver and etcd: the
// second round's measurements run on the pods the first left (changed by
// its churn and relist, the server restarted by the relist).
func TestRunOnKubeAPIServer(t *testing.T) {
	if testing.Short() {
		t.Skip("starts kube-apiserver and etcd; runs without -short (make test)")
	}
	cmdtest.Run(t, run, []cmdtest.Case{{
		Name: "kube-apiserver",
		Args: []string{"-server", "kube-apiserver", "-n", "60", "-impl", "client-go,bolt", "-relist", "10", "-churn-workers", "4", "-rounds", "2", "-dir", t.TempDir()},
		Code: cmdrun.ExitOK,
		Stdout: []string{
			"60 podgen pods over HTTP (application/vnd.kubernetes.protobuf) from kube-apiserver, 60 updates, round 1 of 2 on one server",
			"60 updates, round 2 of 2 on one server",
			"update events/s", "update writes/s the server applied", "410 relist, 10% changed s", "warm restart LIST requests (the resume check)",
			"client-go cold sync: 0 lists, 1 watches (1 WatchList)", "by 4 concurrent writers",
		},
		StderrIn: "kubeserver: created 60 pods",
	}})
}
