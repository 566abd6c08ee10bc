package soak

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/warmcache/warmcache/internal/soakctl"
)

// The files of a report.
const (
	reportSummary = "report.md"
	plotRSS       = "rss.svg"
	plotFile      = "filesize.svg"
	plotConverge  = "converge.svg"
	plotRoutines  = "goroutines.svg"
)

// write writes the report into dir: the summary (report.md), its figures
// (SVG) and its data (report.json).
func (r *Report) write(dir string) error {
	if err := r.writeJSON(dir); err != nil {
		return err
	}
	for name, p := range r.plots() {
		var b bytes.Buffer
		if err := p.write(&b); err != nil {
			return fmt.Errorf("soak: plot %s: %w", name, err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b.Bytes(), 0o644); err != nil {
			return fmt.Errorf("soak: write %s: %w", name, err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, reportSummary), []byte(r.Markdown()), 0o644); err != nil {
		return fmt.Errorf("soak: write the summary: %w", err)
	}
	return nil
}

// minutes returns the elapsed faults phase in minutes, at least the
// planned duration's.
func (r *Report) minutes() float64 {
	return math.Max(r.Elapsed.Minutes(), r.Duration.Minutes())
}

// plots returns the report's figures by file name.
func (r *Report) plots() map[string]plot {
	marks := make([]plotMark, 0, len(r.Faults))
	kinds := map[FaultKind]bool{}
	for _, f := range r.Faults {
		if _, ok := kindColors[f.Kind]; ok {
			marks = append(marks, plotMark{X: f.At / 60, Color: kindColor(f.Kind)})
			kinds[f.Kind] = true
		}
	}
	var legend []plotSeries
	for _, k := range FaultKinds {
		if kinds[k] {
			legend = append(legend, plotSeries{Name: string(k), Color: kindColor(k)})
		}
	}
	// One line per measure, broken where the controller was down or
	// restarted.
	line := func(name, color string, v func(Sample) float64) plotSeries {
		s := plotSeries{Name: name, Color: color}
		for i, smp := range r.Samples {
			if i > 0 && smp.Run != r.Samples[i-1].Run {
				s.Points = append(s.Points, [2]float64{smp.T / 60, math.NaN()})
			}
			s.Points = append(s.Points, [2]float64{smp.T / 60, v(smp)})
		}
		return s
	}
	mib := func(n int64) float64 { return float64(n) / (1 << 20) }
	conv := map[FaultKind]*plotSeries{}
	var convSeries []plotSeries
	for _, k := range append([]FaultKind{"cold start"}, FaultKinds...) {
		conv[k] = &plotSeries{Name: string(k), Color: kindColor(k), Dots: true}
	}
	for _, f := range r.Faults {
		s, ok := conv[f.Kind]
		if !ok || f.Converge < 0 {
			continue
		}
		s.Points = append(s.Points, [2]float64{f.At / 60, f.Converge})
	}
	for _, k := range append([]FaultKind{"cold start"}, FaultKinds...) {
		if len(conv[k].Points) > 0 {
			convSeries = append(convSeries, *conv[k])
		}
	}
	x := r.minutes()
	return map[string]plot{
		plotRSS: {Title: "Controller: anonymous RSS and Go heap", YLabel: "MiB", XMax: x, Marks: marks, Legend: legend, Series: []plotSeries{
			line("anonymous RSS", "#1f77b4", func(s Sample) float64 { return mib(s.RSSAnon) }),
			line("heap objects", "#aec7e8", func(s Sample) float64 { return float64(s.HeapBytes) / (1 << 20) }),
		}},
		plotFile: {Title: "Cache file size", YLabel: "MiB", XMax: x, Marks: marks, Legend: legend, Series: []plotSeries{
			line("file size", "#2ca02c", func(s Sample) float64 { return mib(s.FileBytes) }),
		}},
		plotRoutines: {Title: "Controller goroutines", YLabel: "goroutines", XMax: x, Marks: marks, Legend: legend, Series: []plotSeries{
			line("goroutines", "#9467bd", func(s Sample) float64 { return float64(s.Goroutines) }),
		}},
		plotConverge: {Title: "Time to converge after each fault (until every handler held a LIST's objects)", YLabel: "seconds", XMax: x, Series: convSeries},
	}
}

// Markdown returns the summary a person reads.
func (r *Report) Markdown() string {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	verdict := "**passed**: every check held"
	if r.Failed() {
		n := 0
		for _, c := range r.FindingCounts {
			n += c
		}
		verdict = fmt.Sprintf("**failed**: %d findings", n)
		if r.Aborted != "" {
			verdict += ", aborted: " + r.Aborted
		}
	}
	p("# Soak: %v of faults against a real kube-apiserver and etcd\n\n", r.Duration)
	p("Seed %d, started %s, faults phase %v: %s.\n", r.Seed, r.Started.UTC().Format(time.RFC3339), r.Elapsed.Round(time.Second), verdict)
	p("Reproduce the schedule with `make soak SOAK_DURATION=%v SOAK_SEED=%d`.\n\n", r.Duration, r.Seed)

	p("## Load\n\n")
	st := r.Churn
	p("- %d objects of each resource (pods, configmaps, widgets) created first, in %v; the controller started cold on them.\n", r.Objects, r.Populate.Round(time.Second))
	p("- Churn: %d requests that succeeded in %v of churn (paused while the soak compared), **%.0f per second** against a target of %.0f, %d concurrent.\n",
		st.Total(), st.Active.Round(time.Second), st.Rate(), r.Rate, r.Workers)
	for _, res := range soakctl.Resources {
		ops := st.OK[res.Name]
		p("  - %s: %d creates, %d updates, %d deletes\n", res.Name, ops[opCreate], ops[opUpdate], ops[opDelete])
	}
	if len(st.Failed) > 0 {
		p("  - failed requests (most while the apiserver restarted): %s\n", formatCounts(st.Failed))
	}
	p("- Disk: %s (%s).\n\n", r.Disk, r.DiskNote)

	p("## Faults and recoveries\n\n")
	counts := r.FaultCounts()
	p("| fault | injected |\n|---|---|\n")
	for _, k := range FaultKinds {
		p("| %s | %d |\n", k, counts[k])
	}
	if phases := r.KillPhases(); len(phases) > 0 {
		p("\nKills by how far the controller had got: %s.\n", formatCounts(phases))
	}
	longest, median, n := r.ConvergeStats()
	p("\n%d recoveries converged (every handler held exactly a paginated LIST's objects, and the LISTs matched etcd's history); median %.1f s, **longest %.1f s** (after the %s at %s: %s).\n\n",
		n, median, longest.Converge, longest.Kind, clock(longest.At), longest.Detail)
	byKind := map[FaultKind][]float64{}
	for _, f := range r.Faults {
		if f.Converge >= 0 {
			byKind[f.Kind] = append(byKind[f.Kind], f.Converge)
		}
	}
	p("| recovery after | count | median (s) | longest (s) |\n|---|---|---|---|\n")
	for _, k := range append([]FaultKind{"cold start"}, append(FaultKinds, "final check")...) {
		ts := byKind[k]
		if len(ts) == 0 {
			continue
		}
		sort.Float64s(ts)
		p("| %s | %d | %.1f | %.1f |\n", k, len(ts), ts[len(ts)/2], ts[len(ts)-1])
	}

	p("\n## Checks\n\n")
	c := r.Checks
	p("- %d handler events checked against client-go's contract and etcd's history (no add of a held key, updates from the last state told, no delete of an unknown key, every state one the server wrote);\n", c.Events)
	p("- %d initial lists, each exactly the server's objects at one revision between the controller's start and the list's end (%d controller runs);\n", c.InitialLists, r.Runs)
	p("- %d convergence checks against paginated LISTs; %d `snapshot verify` runs; %d reads of the file after a kill or stop, each equal to the server's objects at the file's resourceVersion;\n", c.Converged, c.Verified, c.Files)
	p("- %d objects compared with the server's, content included, in the file after the final stop.\n", c.Content)
	k := r.Counters
	p("- The informers counted %d relists, %d 410 answers, %d warm resumes, %d LIST requests and %d failed store writes (retried).\n\n", k.Relists, k.Expired, k.Resumes, k.Lists, k.ApplyFailures)

	p("## Findings\n\n")
	if len(r.Findings) == 0 && r.Aborted == "" {
		p("None.\n\n")
	} else {
		if r.Aborted != "" {
			p("The run was aborted: %s\n\n", r.Aborted)
		}
		p("| check | count |\n|---|---|\n")
		checks := make([]string, 0, len(r.FindingCounts))
		for ch := range r.FindingCounts {
			checks = append(checks, ch)
		}
		sort.Strings(checks)
		for _, ch := range checks {
			p("| %s | %d |\n", ch, r.FindingCounts[ch])
		}
		p("\n")
		for _, f := range r.Findings {
			p("- %s **%s** (run %d): %s\n", clock(f.At), f.Check, f.Run, oneLine(f.Detail))
		}
		p("\nThe logs of those runs of the controller, and of the runs before them, are in [logs](logs).\n\n")
	}

	p("## Memory, goroutines and file size over the run\n\n")
	p("Medians of the samples taken every few seconds while every handler was synced and no fault was in progress, by quarter of the run; each quarter may exceed the one before it, and the last the first, by the tolerance at most. The RSS is judged in quarters of %.0f minutes or more (a run of %.0f): right after a recovery that relisted, it holds memory the runtime has not yet returned, which a shorter quarter cannot tell from growth.\n\n", rssMinQuarter.Minutes(), 4*rssMinQuarter.Minutes())
	p("| measure | Q1 | Q2 | Q3 | Q4 | tolerance | |\n|---|---|---|---|---|---|---|\n")
	for _, bd := range r.Bounds {
		ok := "held"
		switch {
		case !bd.OK:
			ok = "**grew**"
		case !bd.Judged:
			ok = "not judged (quarters too short)"
		}
		qs := make([]string, len(bd.Quarters))
		for i, q := range bd.Quarters {
			qs[i] = "n/a"
			if q > 0 {
				qs[i] = strings.TrimSpace(fmt.Sprintf("%.1f %s", q, bd.Unit))
			}
		}
		p("| %s | %s | %s | %s |\n", bd.Metric, strings.Join(qs, " | "), bd.Tolerance, ok)
	}
	p("\n![anonymous RSS](%s)\n\n![cache file size](%s)\n\n![goroutines](%s)\n\n![time to converge](%s)\n\n", plotRSS, plotFile, plotRoutines, plotConverge)

	p("## Timeline\n\n| at | fault | what happened | converged in |\n|---|---|---|---|\n")
	for _, f := range r.Faults {
		conv := "**no**"
		if f.Converge >= 0 {
			conv = fmt.Sprintf("%.1f s", f.Converge)
		}
		p("| %s | %s | %s | %s |\n", clock(f.At), f.Kind, oneLine(f.Detail), conv)
	}
	return b.String()
}

// clock formats seconds from the start as mm:ss.
func clock(sec float64) string {
	d := time.Duration(sec * float64(time.Second)).Round(time.Second)
	return fmt.Sprintf("%02d:%02d", int(d.Minutes()), int(d.Seconds())%60)
}

func oneLine(s string) string {
	s = strings.ReplaceAll(s, "\n", " ")
	s = strings.ReplaceAll(s, "|", "\\|")
	if len(s) > 600 {
		s = s[:600] + " ..."
	}
	return s
}

func formatCounts(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %d", k, m[k])
	}
	return strings.Join(parts, ", ")
}
