package main

import (
	"io"
	"testing"

	"go.uber.org/goleak"

	"github.com/warmcache/warmcache/benchmarks/internal/cmdrun"
	"github.com/warmcache/warmcache/benchmarks/internal/cmdtest"
	"github.com/warmcache/warmcache/benchmarks/internal/scalebench"
)

func TestMain(m *testing.M) {
	// The program starts itself again as its server and informers; so
	// does its test.
	scalebench.MaybeRun()
	goleak.VerifyTestMain(m)
}

func TestRun(t *testing.T) {
	cmdtest.Run(t, run, []cmdtest.Case{
		{
			Name:   "small run",
			Args:   []string{"-n", "150", "-updates", "10", "-memlimit", "512MiB", "-dir", t.TempDir()},
			Code:   cmdrun.ExitOK,
			Stdout: []string{"peak RssAnon MiB", "warm-replay", "warm-no-handler", "relist", "server alone: 150 pods", "512", "command: go run ./benchmarks/cmd/scalebench -n 150"},
		},
		{
			Name:   "small mix",
			Args:   []string{"-n", "0", "-mix", "60", "-mix-types", "6", "-mix-skew", "-mix-updates", "10", "-mix-one", "-dir", t.TempDir()},
			Code:   cmdrun.ExitOK,
			Stdout: []string{"factory-cold", "factory-steady", "factory: 6 informers, memory budget none, no list gate", "sum of 6 warm starts alone", "the largest resource alone (pods, 20 objects"},
		},
		{Name: "nothing", Args: []string{"-n", "0"}, Code: cmdrun.ExitUsage, StderrIn: "nothing to measure"},
		{Name: "too few types", Args: []string{"-mix", "10", "-mix-types", "4"}, Code: cmdrun.ExitUsage, StderrIn: "-mix-types"},
		{Name: "bad memory budget", Args: []string{"-mix", "10", "-mix-memory", "lots"}, Code: cmdrun.ExitUsage, StderrIn: "-mix-memory"},
		{Name: "memory budget below the minimum", Args: []string{"-mix", "10", "-mix-memory", "31MiB"}, Code: cmdrun.ExitUsage, StderrIn: "-mix-memory"},
		{Name: "negative updates", Args: []string{"-mix", "10", "-mix-updates", "-1"}, Code: cmdrun.ExitUsage, StderrIn: "-mix-updates"},
		{Name: "bad cgroup limit", Args: []string{"-cgroup-limit", "lots"}, Code: cmdrun.ExitUsage, StderrIn: "-cgroup-limit"},
		{Name: "bad memlimit", Args: []string{"-memlimit", "1PB"}, Code: cmdrun.ExitUsage, StderrIn: "-memlimit"},
		{Name: "negative page", Args: []string{"-mix", "10", "-mix-page", "-1"}, Code: cmdrun.ExitUsage, StderrIn: "-mix-page"},
		{Name: "relist beyond 100", Args: []string{"-relist", "101"}, Code: cmdrun.ExitUsage, StderrIn: "-relist"},
		{Name: "extra arguments", Args: []string{"more"}, Code: cmdrun.ExitUsage, StderrIn: "unexpected arguments"},
		{Name: "missing directory", Args: []string{"-n", "5", "-dir", "/nonexistent/scalebench"}, Code: cmdrun.ExitFail, StderrIn: "scalebench:"},
	})
}

func TestParseBytes(t *testing.T) {
	for in, want := range map[string]int64{"1GiB": 1 << 30, "1.5GiB": 3 << 29, "512MiB": 512 << 20, "4096": 4096, "8KiB": 8192} {
		if got, err := parseBytes(in); err != nil || got != want {
			t.Errorf("parseBytes(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "-1GiB", "1TB", "GiB"} {
		if _, err := parseBytes(in); err == nil {
			t.Errorf("parseBytes(%q) succeeded", in)
		}
	}
}

func TestParseMix(t *testing.T) {
	o, err := parse([]string{"-mix", "1000", "-mix-types", "200", "-mix-skew", "-mix-updates", "5", "-mix-memory", "384MiB"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if o.Mix != 1000 || o.MixTypes != 200 || !o.MixSkew || o.MixUpdates != 5 || o.MixMemory != 384<<20 {
		t.Errorf("parsed %+v", o)
	}
	o, err = parse([]string{"-mix", "1000"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if o.MixTypes != scalebench.DefaultMixTypes || o.MixSkew || o.MixUpdates != 20000 || o.MixMemory != 0 {
		t.Errorf("defaults %+v", o)
	}
}
