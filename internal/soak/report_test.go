package soak

import (
	"encoding/xml"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// steady returns steady samples every 10s over d, of f(t) for each
// measure.
func steady(d time.Duration, f func(t float64) float64) []Sample {
	var out []Sample
	for t := 0.0; t < d.Seconds(); t += 10 {
		v := f(t)
		out = append(out, Sample{T: t, Run: 1, Steady: true, RSSAnon: int64(v * (1 << 20)), Goroutines: int(v), FileBytes: int64(v * (1 << 20))})
	}
	return out
}

func TestBounds(t *testing.T) {
	hour := time.Hour
	for _, tc := range []struct {
		name    string
		samples []Sample
		ok      bool
	}{
		{"flat", steady(hour, func(float64) float64 { return 100 }), true},
		{"noisy but flat", steady(hour, func(t float64) float64 { return 100 + 15*math.Sin(t/7) }), true},
		{"growing", steady(hour, func(t float64) float64 { return 100 + t/15 }), false},
		{"one quarter jumps", steady(hour, func(t float64) float64 {
			if t > 1800 && t < 2700 {
				return 250
			}
			return 100
		}), false},
		{"shrinking", steady(hour, func(t float64) float64 { return 300 - t/20 }), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, b := range bounds(tc.samples, hour) {
				if b.OK != tc.ok {
					t.Errorf("%s: OK = %v, want %v (%+v)", b.Metric, b.OK, tc.ok, b)
				}
			}
		})
	}
	// Unsteady samples do not count; a quarter without enough is not
	// compared.
	s := steady(hour, func(t float64) float64 { return 100 })
	for i := range s {
		if s[i].T > 2700 {
			s[i].Steady = false
			s[i].RSSAnon *= 10
		}
	}
	for _, b := range bounds(s, hour) {
		if !b.OK || b.Quarters[3] != 0 || !strings.Contains(b.Detail, "quarter 4 had fewer") {
			t.Errorf("%s with an unsteady last quarter: %+v", b.Metric, b)
		}
	}
}

// TestBoundsShortRun: a run whose third quarter is mostly the aftermath
// of one relist (seed 1 of the five-minute run in CI: its RSS median
// doubled while the heap was back to its usual size) judges the RSS only
// in quarters of rssMinQuarter or more; the goroutines and the file in
// any run.
func TestBoundsShortRun(t *testing.T) {
	aftermath := func(d time.Duration) []Sample {
		return steady(d, func(t float64) float64 {
			if q := 4 * t / d.Seconds(); q >= 2 && q < 3 {
				return 100
			}
			return 45
		})
	}
	long := 4 * rssMinQuarter
	for _, tc := range []struct {
		name      string
		run       time.Duration
		rssJudged bool
	}{
		{"five minutes", 5 * time.Minute, false},
		{"just short", long - time.Second, false},
		{"long enough", long, true},
		{"an hour", time.Hour, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, b := range bounds(aftermath(tc.run), tc.run) {
				judged := tc.rssJudged || b.Metric != "anonymous RSS"
				switch {
				case judged && (!b.Judged || b.OK):
					t.Errorf("%s: %+v, want judged, and grown", b.Metric, b)
				case !judged && (b.Judged || !b.OK || !strings.Contains(b.Detail, "not judged")):
					t.Errorf("%s: %+v, want not judged", b.Metric, b)
				case b.Quarters[2] != 100 || b.Quarters[1] != 45:
					t.Errorf("%s: quarters %v, want the medians 45 and 100 shown", b.Metric, b.Quarters)
				}
			}
		})
	}
}

func TestDiffContent(t *testing.T) {
	obj := func(rv string, labels map[string]interface{}, data string) map[string]interface{} {
		return map[string]interface{}{
			"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]interface{}{"namespace": "ns", "name": "a", "resourceVersion": rv, "labels": labels},
			"data":     map[string]interface{}{"k": data},
		}
	}
	want := map[string]map[string]interface{}{"ns/a": obj("5", map[string]interface{}{"x": "1"}, "v")}
	same := obj("5", map[string]interface{}{"x": "1"}, "v")
	delete(same, "apiVersion") // a LIST's items have none
	if d := diffContent(map[string]map[string]interface{}{"ns/a": same}, want); d != "" {
		t.Errorf("equal objects differ: %s", d)
	}
	for _, tc := range []struct {
		got  map[string]map[string]interface{}
		want string
	}{
		{map[string]map[string]interface{}{}, "missing ns/a"},
		{map[string]map[string]interface{}{"ns/a": obj("4", map[string]interface{}{"x": "1"}, "v")}, "ns/a at 4, the server's at 5"},
		{map[string]map[string]interface{}{"ns/a": obj("5", map[string]interface{}{"x": "2"}, "v")}, "ns/a differs in metadata.labels"},
		{map[string]map[string]interface{}{"ns/a": obj("5", map[string]interface{}{"x": "1"}, "w")}, "ns/a differs in data"},
		{map[string]map[string]interface{}{"ns/a": same, "ns/b": same}, "phantom ns/b"},
	} {
		if d := diffContent(tc.got, want); !strings.Contains(d, tc.want) {
			t.Errorf("diffContent = %q, want it to name %q", d, tc.want)
		}
	}
}

// TestReportWrite: a report renders to its summary, its figures (well
// formed SVG) and its data, naming what a reader looks for.
func TestReportWrite(t *testing.T) {
	r := &Report{Seed: 7, Duration: 10 * time.Minute, Elapsed: 10 * time.Minute, Objects: 100, Rate: 200, Workers: 4,
		Disk: DiskTmpfs, DiskNote: "a tmpfs", FindingCounts: map[string]int{CheckConverge: 1},
		Findings: []Finding{{At: 61, Check: CheckConverge, Detail: "run 3: not converged | pods: missing a"}},
		Faults: []FaultRecord{
			{At: 0, Kind: "cold start", Converge: 3.5},
			{At: 70, Kind: FaultKill, Kills: 2, While: []FaultKind{FaultPageDamage, FaultCompact}, Detail: "killed", Converge: 7.25},
			{At: 130, Kind: FaultStreamStall, Converge: -1},
			{At: 300, Kind: FaultDiskFull, Converge: 2},
		},
		Samples: steady(10*time.Minute, func(t float64) float64 { return 50 }),
	}
	r.Bounds = bounds(r.Samples, r.Elapsed)
	dir := t.TempDir()
	if err := r.write(dir); err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(filepath.Join(dir, reportSummary))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Seed 7", "**failed**: 1 findings", "longest 7.2 s", "| kill | 2 |", "| page damage | 1 |", "| etcd compaction | 1 |",
		`not converged \| pods`, "make soak SOAK_DURATION=10m0s SOAK_SEED=7", "![anonymous RSS](rss.svg)", "| 02:10 | stream stall |  | **no** |"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("the summary lacks %q:\n%s", want, md)
		}
	}
	for _, name := range []string{plotRSS, plotFile, plotConverge, plotRoutines, "report.json"} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(name, ".svg") {
			if err := xml.Unmarshal(b, new(struct{})); err != nil || !strings.Contains(string(b), "<polyline") && !strings.Contains(string(b), "<circle") {
				t.Errorf("%s: not an SVG with data (%v)", name, err)
			}
		}
	}
}

func TestNiceStep(t *testing.T) {
	for _, tc := range []struct {
		span float64
		n    int
		want float64
	}{{60, 10, 10}, {37, 5, 10}, {1, 5, 0.2}, {1.1, 5, 0.25}, {850, 5, 200}, {0, 5, 1}} {
		if got := niceStep(tc.span, tc.n); got != tc.want {
			t.Errorf("niceStep(%v, %d) = %v, want %v", tc.span, tc.n, got, tc.want)
		}
	}
}
