package soak

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"time"
)

// Report is what a run did and found. WriteReport renders it.
type Report struct {
	Seed     uint64        `json:"seed"`
	Duration time.Duration `json:"duration"` // of the schedule, as configured
	Started  time.Time     `json:"started"`
	// Elapsed is how long the faults phase lasted (at least Duration).
	Elapsed time.Duration `json:"elapsed"`
	Objects int           `json:"objects"`
	Rate    float64       `json:"rate"` // the churn's target
	Workers int           `json:"workers"`
	// Disk is how the disk was filled, and DiskNote why.
	Disk     string `json:"disk"`
	DiskNote string `json:"diskNote,omitempty"`
	// Populate is how long the initial objects took to create.
	Populate time.Duration `json:"populate"`
	Churn    churnStats    `json:"churn"`
	// Schedule is the planned faults; Faults what was done.
	Schedule []Fault       `json:"schedule"`
	Faults   []FaultRecord `json:"faults"`
	Samples  []Sample      `json:"samples"`
	// Findings are the failed checks (at most maxFindings of each);
	// FindingCounts counts them all, by check.
	Findings      []Finding      `json:"findings"`
	FindingCounts map[string]int `json:"findingCounts"`
	Checks        Checks         `json:"checks"`
	// Runs is how many times the controller was started.
	Runs int `json:"runs"`
	// Counters sums the informers' counters over the runs.
	Counters Counters `json:"counters"`
	Bounds   []Bound  `json:"bounds"`
	// Aborted is why the run stopped early, "" if it did not.
	Aborted string `json:"aborted,omitempty"`
}

// FaultRecord is one fault as injected, and the recovery from it.
type FaultRecord struct {
	// At is the time from the start of the faults, in seconds.
	At     float64   `json:"at"`
	Kind   FaultKind `json:"kind"`
	Detail string    `json:"detail"`
	// While are the faults made while a killed controller was down;
	// Kills the SIGKILLs of the controller (a kill's second one, a
	// kill during an apiserver restart's relist).
	While []FaultKind `json:"while,omitempty"`
	Kills int         `json:"kills,omitempty"`
	// Phases are how far the controller had got at each kill: starting
	// (nothing told yet), initial list, or synced.
	Phases []string `json:"phases,omitempty"`
	// Converge is the time from the end of the fault (the controller
	// restarted, the apiserver ready, the stream or disk back) until
	// every handler held exactly the server's objects, in seconds; -1
	// if it did not within the timeout.
	Converge float64 `json:"converge"`
}

// Sample is one measurement of the controller.
type Sample struct {
	T          float64 `json:"t"` // seconds from the start of the faults
	Run        int     `json:"run"`
	RSSAnon    int64   `json:"rssAnon"`    // bytes
	Goroutines int     `json:"goroutines"` // from its last runtime line
	HeapBytes  uint64  `json:"heapBytes"`
	FileBytes  int64   `json:"fileBytes"`
	// Steady: every handler had synced and no fault was in progress.
	Steady bool `json:"steady"`
}

// Finding is a failed check.
type Finding struct {
	At     float64 `json:"at"` // seconds from the start of the faults
	Check  string  `json:"check"`
	Detail string  `json:"detail"`
	// Run is the controller's run when it was found: the report keeps
	// its log (logs/controller-RUN.log) and the one before.
	Run int `json:"run"`
}

// Checks counts the checks that ran.
type Checks struct {
	// Converged: the handlers' views compared with a paginated LIST
	// after each recovery.
	Converged int `json:"converged"`
	// Files: the file read with the snapshot CLI after a kill or stop,
	// compared with the server's objects at its resourceVersion.
	Files int `json:"files"`
	// Verified: `snapshot verify` runs.
	Verified int `json:"verified"`
	// InitialLists: handlers' initial lists matched against the server's
	// history.
	InitialLists int `json:"initialLists"`
	// Events: handler events checked.
	Events int64 `json:"events"`
	// Content: objects whose content the final check compared.
	Content int `json:"content"`
}

// Counters are the informers' counters, summed over the controller's
// runs.
type Counters struct {
	Lists         int64 `json:"lists"`
	Relists       int64 `json:"relists"`
	Expired       int64 `json:"expired"` // 410 answers
	Resumes       int64 `json:"resumes"`
	ApplyFailures int64 `json:"applyFailures"`
}

// Bound is the check that a measure did not grow over the run.
type Bound struct {
	Metric string `json:"metric"`
	Unit   string `json:"unit"`
	// Quarters are the medians of the steady samples of each quarter of
	// the run, 0 where a quarter had too few samples to compare.
	Quarters []float64 `json:"quarters"`
	// Tolerance is the growth allowed between any two quarters compared.
	Tolerance string `json:"tolerance"`
	// Judged is false when the run's quarters were too short for the
	// measure to be compared (see bounds); OK is then true.
	Judged bool   `json:"judged"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail,omitempty"`
}

// rssMinQuarter is the shortest quarter of a run in which the anonymous
// RSS is judged (see bounds): a run of 20 minutes or more.
const rssMinQuarter = 5 * time.Minute

// maxFindings is how many findings of one check the report details.
const maxFindings = 25

// ConvergeStats returns the longest time to converge and its fault,
// the median, and how many recoveries converged.
func (r *Report) ConvergeStats() (longest FaultRecord, median float64, n int) {
	var ts []float64
	for _, f := range r.Faults {
		if f.Converge < 0 {
			continue
		}
		ts = append(ts, f.Converge)
		if f.Converge > longest.Converge {
			longest = f
		}
	}
	if len(ts) == 0 {
		return longest, 0, 0
	}
	sort.Float64s(ts)
	return longest, ts[len(ts)/2], len(ts)
}

// FaultCounts counts the faults injected by kind: each SIGKILL, and
// the faults made while a killed controller was down.
func (r *Report) FaultCounts() map[FaultKind]int {
	out := map[FaultKind]int{}
	for _, f := range r.Faults {
		if f.Kind != FaultKill {
			out[f.Kind]++
		}
		out[FaultKill] += f.Kills
		for _, w := range f.While {
			out[w]++
		}
	}
	return out
}

// KillPhases counts the kills by how far the controller had got.
func (r *Report) KillPhases() map[string]int {
	out := map[string]int{}
	for _, f := range r.Faults {
		for _, p := range f.Phases {
			out[p]++
		}
	}
	return out
}

// Failed reports whether any check failed.
func (r *Report) Failed() bool { return len(r.Findings) > 0 || r.Aborted != "" }

// bounds checks that the steady samples of RSS, goroutines and file size
// did not grow from one quarter of the run to the next, nor from the
// first to the last.
//
// The tolerances: the anonymous RSS of a Go process moves with the heap
// between collections (GOGC=100 lets it reach twice the live heap) and
// with what the runtime has not yet returned to the system, so a quarter's
// median may exceed the last one's by a quarter without a leak, plus 16
// MiB for a small heap; a leak of even a few objects per event grows it
// by more over an hour of 200 events a second. Goroutines: one more
// connection or watch in flight when sampled; 20% plus 10. The file:
// bbolt never shrinks it, and a relist needs room for a second copy of a
// resource (docs/deployment.md sizes the disk for twice the file), so it
// may double once, when the first relist comes after a quarter without
// one: 100% plus 8 MiB; a file that leaks pages grows past that over an
// hour, from the first quarter to the last.
//
// The RSS is judged only in quarters of rssMinQuarter or more. Right
// after a recovery that relisted (a full disk, an apiserver restart) the
// heap holds several times its usual garbage, and the runtime keeps those
// pages long after collecting it (after a full disk in a five-minute run:
// 180 MiB of heap where 30 is usual, then an RSS of 100 MiB over a heap
// of 30 until the next kill). A quarter of a five-minute run is 75 s,
// with a fault every 30 s: its median can be that one aftermath, which is
// not growth. The table still shows such a run's medians.
func bounds(samples []Sample, elapsed time.Duration) []Bound {
	type measure struct {
		name, unit string
		value      func(Sample) float64
		rel, abs   float64
		minQuarter time.Duration
	}
	measures := []measure{
		{"anonymous RSS", "MiB", func(s Sample) float64 { return float64(s.RSSAnon) / (1 << 20) }, 0.25, 16, rssMinQuarter},
		{"goroutines", "", func(s Sample) float64 { return float64(s.Goroutines) }, 0.20, 10, 0},
		{"cache file size", "MiB", func(s Sample) float64 { return float64(s.FileBytes) / (1 << 20) }, 1, 8, 0},
	}
	const minSamples = 3
	var out []Bound
	for _, m := range measures {
		var quarters [4][]float64
		for _, s := range samples {
			if !s.Steady {
				continue
			}
			q := min(int(4*s.T/elapsed.Seconds()), 3)
			if q < 0 {
				continue
			}
			quarters[q] = append(quarters[q], m.value(s))
		}
		b := Bound{Metric: m.name, Unit: m.unit, Quarters: make([]float64, 4), OK: true, Judged: elapsed/4 >= m.minQuarter,
			Tolerance: fmt.Sprintf("+%.0f%% +%g%s", m.rel*100, m.abs, m.unit)}
		have := make([]bool, 4)
		for i, q := range quarters {
			if len(q) >= minSamples {
				slices.Sort(q)
				b.Quarters[i], have[i] = q[len(q)/2], true
			}
		}
		if !b.Judged {
			b.Detail = fmt.Sprintf("not judged: quarters of %v, shorter than %v; ", (elapsed / 4).Round(time.Second), m.minQuarter)
		}
		check := func(i, j int) {
			if !b.Judged || !have[i] || !have[j] {
				return
			}
			if limit := b.Quarters[i]*(1+m.rel) + m.abs; b.Quarters[j] > limit {
				b.OK = false
				b.Detail += fmt.Sprintf("quarter %d (%.1f) above quarter %d's %.1f + tolerance = %.1f; ", j+1, b.Quarters[j], i+1, b.Quarters[i], limit)
			}
		}
		for i := range 3 {
			check(i, i+1)
		}
		check(0, 3)
		for i, ok := range have {
			if !ok {
				b.Detail += fmt.Sprintf("quarter %d had fewer than %d steady samples; ", i+1, minSamples)
			}
		}
		out = append(out, b)
	}
	return out
}

// writeJSON writes the report's data beside the summary.
func (r *Report) writeJSON(dir string) error {
	b, err := json.MarshalIndent(r, "", " ")
	if err != nil {
		return fmt.Errorf("soak: encode the report: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "report.json"), append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("soak: write the report: %w", err)
	}
	return nil
}
