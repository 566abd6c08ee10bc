package scalebench

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	// Run starts this test binary again as its server and informers.
	MaybeRun()
	goleak.VerifyTestMain(m)
}

const testTimeout = 5 * time.Minute

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	t.Cleanup(cancel)
	return ctx
}

func TestRunEveryPhase(t *testing.T) {
	const n, cg, mix = 400, 300, 600
	var stderr bytes.Buffer
	res, err := Run(testContext(t), Options{
		N: n, ClientGoN: cg, Mix: mix, MixOne: !testing.Short(), Dir: t.TempDir(),
		MixBudget: 20, MixPage: 7, // a budget less than the 50 informers' pages together
		MemLimit: "1GiB", Updates: 50, RelistPercent: 10, Stderr: &stderr,
	})
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	want := []string{"bolt cold", "bolt steady", "bolt relist", "bolt warm-replay", "bolt warm-no-handler",
		"client-go cold", "client-go steady", "client-go relist", "factory factory-cold", "factory factory-warm"}
	if !testing.Short() {
		for range MixTypes {
			want = append(want, "factory factory-warm-one")
		}
	}
	if len(res.Phases) != len(want) {
		t.Fatalf("%d phases, want %d: %+v", len(res.Phases), len(want), res.Phases)
	}
	one := 0
	for i, p := range res.Phases {
		if got := p.Impl + " " + p.Name; got != want[i] {
			t.Errorf("phase %d is %s, want %s", i, got, want[i])
		}
		if p.Seconds <= 0 || p.AnonPeak == 0 || p.HeapPeak == 0 || p.HWM < p.AnonPeak || p.AnonEnd == 0 {
			t.Errorf("%s %s: incomplete figures %+v", p.Impl, p.Name, p)
		}
		limited := p.Impl != "client-go"
		if (p.MemLimit == 1<<30) != limited {
			t.Errorf("%s %s: memory limit %d", p.Impl, p.Name, p.MemLimit)
		}
		// The bolt store's file is mapped: its pages are file-backed.
		if limited && p.FilePeak == 0 {
			t.Errorf("%s %s: no file-backed memory", p.Impl, p.Name)
		}
		wantEvents := p.N
		switch {
		case p.Name == "steady":
			wantEvents = 50
		case p.Name == "relist" && p.Impl == "client-go":
			// client-go tells its handlers of every object on a relist.
			wantEvents = p.N
		case p.Name == "relist":
			wantEvents = p.N / 10
		case p.Name == modeWarmNoHandler:
			wantEvents = 0
		case p.Name == modeFactoryWarmOne:
			one += p.N
		}
		if p.Events != wantEvents {
			t.Errorf("%s %s: %d events, want %d", p.Impl, p.Name, p.Events, wantEvents)
		}
	}
	if !testing.Short() && one != mix {
		t.Errorf("the warm starts alone hold %d objects, want %d", one, mix)
	}
	if s := res.Server; s == nil || s.N != n || s.Bytes < int64(n)*1000 || s.Seconds <= 0 {
		t.Errorf("server alone: %+v", res.Server)
	}

	var out bytes.Buffer
	if err := WriteTable(&out, res); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"peak RssAnon MiB", "warm-no-handler", "factory-warm", "server alone: 400 pods"} {
		if !strings.Contains(out.String(), s) {
			t.Errorf("table lacks %q:\n%s", s, out.String())
		}
	}
	if !testing.Short() && !strings.Contains(out.String(), "sum of 50 warm starts alone") {
		t.Errorf("table lacks the sum of the warm starts alone:\n%s", out.String())
	}
}

// TestCgroupOrReason runs an informer under a cgroup limit: either each
// phase reports the cgroup's peak, or the result says why no cgroup could
// be created here.
func TestCgroupOrReason(t *testing.T) {
	res, err := Run(testContext(t), Options{N: 200, Dir: t.TempDir(), CgroupLimit: 1 << 30, Updates: 20, RelistPercent: -1, SkipServerAlone: true, Stderr: &bytes.Buffer{}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Server != nil {
		t.Errorf("the server alone was measured: %+v", res.Server)
	}
	if len(res.Phases) != 4 {
		t.Fatalf("%d phases, want cold, steady and two warm restarts", len(res.Phases))
	}
	for _, p := range res.Phases {
		if (p.CgroupPeak == 0) == (res.CgroupError == "") {
			t.Errorf("%s: cgroup peak %d, cgroup error %q", p.Name, p.CgroupPeak, res.CgroupError)
		}
		if p.CgroupOOM != 0 {
			t.Errorf("%s: %d OOM kills under a 1 GiB limit at 200 pods", p.Name, p.CgroupOOM)
		}
	}
}

func TestRunErrors(t *testing.T) {
	if _, err := Run(context.Background(), Options{N: 1}); err == nil {
		t.Error("Run without a directory succeeded")
	}
}
