package scalebench

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/warmcache/warmcache/benchmarks/internal/genserver"
	"github.com/warmcache/warmcache/factory"
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
		for range DefaultMixTypes {
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

func TestMixCounts(t *testing.T) {
	for _, tc := range []struct {
		name string
		mix  Mix
		want []int
	}{
		{"even", Mix{Objects: 400, Types: 8}, []int{50, 50, 50, 50, 50, 50, 50, 50}},
		{"remainder to the first", Mix{Objects: 403, Types: 8}, []int{51, 51, 51, 50, 50, 50, 50, 50}},
		{"skewed", Mix{Objects: 600, Types: 6, Skew: true}, []int{200, 80, 80, 80, 80, 80}},
		{"skewed with a remainder", Mix{Objects: 302, Types: 5, Skew: true}, []int{100, 51, 51, 50, 50}},
		{"fewer objects than types", Mix{Objects: 3, Types: 6}, []int{1, 1, 1, 1, 1, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.mix.Validate(); err != nil {
				t.Fatal(err)
			}
			got := tc.mix.Counts()
			if !slices.Equal(got, tc.want) {
				t.Fatalf("counts %v, want %v", got, tc.want)
			}
			res := tc.mix.Resources()
			if len(res) != len(tc.want) || res[0].GVR.Resource != "pods" {
				t.Fatalf("%d resources, the first %v", len(res), res[0].GVR)
			}
			for k, r := range res {
				if r.Count != tc.want[k] || (k >= MinMixTypes) != (r.GVR.Group == CRDGroup) {
					t.Errorf("resource %d: %v with %d objects, want %d", k, r.GVR, r.Count, tc.want[k])
				}
			}
		})
	}
	if n := len((Mix{Objects: 10}).Counts()); n != DefaultMixTypes {
		t.Errorf("a mix without types has %d, want %d", n, DefaultMixTypes)
	}
	if res := (Mix{Objects: 200, Types: 200}).Resources(); res[199].GVR.Resource != "widget194s" {
		t.Errorf("the last of 200 types is %v", res[199].GVR)
	}
	for _, m := range []Mix{{Objects: 10, Types: MinMixTypes - 1}, {Objects: 10, Types: -1}, {Types: 8}} {
		if err := m.Validate(); err == nil {
			t.Errorf("%+v is valid", m)
		}
	}
}

func TestShare(t *testing.T) {
	for _, tc := range []struct {
		n       int
		weights []int
		want    []int
	}{
		{40, []int{100, 50, 50}, []int{20, 10, 10}},
		{7, []int{10, 10, 10}, []int{3, 2, 2}},
		{5, []int{1, 1, 1, 100}, []int{1, 0, 0, 4}},
		{3, []int{1, 1, 1}, []int{1, 1, 1}},
		{0, []int{5, 5}, []int{0, 0}},
	} {
		got := share(tc.n, tc.weights)
		if !slices.Equal(got, tc.want) {
			t.Errorf("share(%d, %v) = %v, want %v", tc.n, tc.weights, got, tc.want)
		}
	}
}

// TestMixServer asks the server child of a mix for each of its resources
// and one past them.
func TestMixServer(t *testing.T) {
	ctx := testContext(t)
	mix := Mix{Objects: 90, Types: 7, Skew: true}
	s, err := startServer(ctx, childSpec{Mix: mix}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	dc, err := dynamic.NewForConfig(genserver.Config(s.URL))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range mix.Resources() {
		l, err := dc.Resource(r.GVR).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatalf("%v: %v", r.GVR, err)
		}
		if len(l.Items) != r.Count {
			t.Errorf("%v: %d objects, want %d", r.GVR, len(l.Items), r.Count)
		}
	}
	past := schema.GroupVersionResource{Group: CRDGroup, Version: "v1", Resource: "widget02s"}
	if _, err := dc.Resource(past).List(ctx, metav1.ListOptions{}); err == nil {
		t.Errorf("the server of %d types serves %v", mix.Types, past)
	}
}

// TestMixTypes runs the factory's phases over 8 skewed types under a
// memory budget: the server and the factory agree on the types and their
// counts (each informer's handler told of exactly its resource's objects),
// each resource's warm start alone has its own objects, the steady state's
// updates are cut to one per object, and the budget reaches the factory
// (which then has a list gate).
func TestMixTypes(t *testing.T) {
	mix := Mix{Objects: 300, Types: 8, Skew: true}
	const budget = 64 << 20
	var stderr bytes.Buffer
	res, err := Run(testContext(t), Options{
		Mix: mix.Objects, MixTypes: mix.Types, MixSkew: mix.Skew, MixOne: true, MixUpdates: 10000, MixMemory: budget,
		Dir: t.TempDir(), MemLimit: "1GiB", Stderr: &stderr,
	})
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	want := []string{"factory-cold", "factory-warm"}
	for range mix.Types {
		want = append(want, "factory-warm-one")
	}
	want = append(want, "factory-steady")
	var names []string
	for _, p := range res.Phases {
		names = append(names, p.Name)
	}
	if !slices.Equal(names, want) {
		t.Fatalf("phases %v, want %v", names, want)
	}
	steady := res.Phases[len(res.Phases)-1]
	for _, p := range []Phase{res.Phases[0], res.Phases[1], steady} {
		if p.N != mix.Objects || p.Informers != mix.Types {
			t.Errorf("%s: %d objects, %d informers synced; want %d and %d", p.Name, p.N, p.Informers, mix.Objects, mix.Types)
		}
	}
	for _, p := range res.Phases {
		if p.MemoryBudget != budget || p.ListSlots == 0 || p.QueueBudget == 0 {
			t.Errorf("%s: memory budget %d, %d list slots, queue budget %d", p.Name, p.MemoryBudget, p.ListSlots, p.QueueBudget)
		}
	}
	if steady.Events != mix.Objects || steady.AnonPeak == 0 {
		t.Errorf("steady state: %d updates (want one per object, %d), peak RssAnon %d", steady.Events, mix.Objects, steady.AnonPeak)
	}
	for k, r := range mix.Resources() {
		p := res.Phases[2+k]
		if p.Resource != r.GVR.Resource || p.N != r.Count || p.Informers != 1 {
			t.Errorf("warm start alone %d: %s, %d objects, %d informers; want %s, %d, 1", k, p.Resource, p.N, p.Informers, r.GVR.Resource, r.Count)
		}
	}

	var out bytes.Buffer
	if err := WriteTable(&out, res); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"factory-steady", "factory: 8 informers, memory budget 64 MiB, a list gate of", "sum of 8 warm starts alone", "the largest resource alone (pods, 100 objects"} {
		if !strings.Contains(out.String(), s) {
			t.Errorf("table lacks %q:\n%s", s, out.String())
		}
	}
}

func TestRunMixErrors(t *testing.T) {
	for _, o := range []Options{
		{Mix: 100, MixTypes: MinMixTypes - 1},
		{Mix: 100, MixUpdates: -1},
		{Mix: 100, MixMemory: -1},
		{Mix: 100, MixMemory: factory.MinMemoryBudget - 1},
	} {
		o.Dir = t.TempDir()
		if _, err := Run(context.Background(), o); err == nil {
			t.Errorf("Run(%+v) succeeded", o)
		}
	}
}
