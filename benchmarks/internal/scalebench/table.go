package scalebench

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// WriteTable writes one row per phase, then the server alone and, when the
// single-resource factory warm starts ran, their sums and largest beside
// the warm start of all resources together, with the ratio of its time to
// the largest's.
func WriteTable(w io.Writer, res Result) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "impl\tphase\tobjects\ttime s\tCPU s\tpeak RssAnon MiB\tpeak RssFile MiB\tRssAnon at end MiB\tpeak heap MiB\tsettled heap MiB\tVmHWM MiB\tcgroup peak MiB\tGOMEMLIMIT MiB\t")
	var one []Phase
	var warm *Phase
	var mixed Phase // the factory phase of the most informers
	for i, p := range res.Phases {
		if p.Impl == "factory" && p.Name != modeFactoryWarmOne && p.Informers >= mixed.Informers {
			mixed = p
		}
		if p.Name == modeFactoryWarm {
			warm = &res.Phases[i]
		}
		if p.Name == modeFactoryWarmOne {
			one = append(one, p)
			continue
		}
		writeRow(tw, p, p.Name, false)
	}
	var largest Phase
	slowest := 0.0
	if len(one) > 0 {
		var sum Phase
		sum.Impl, sum.Name = "factory", "sum of warm starts alone"
		for _, p := range one {
			sum.N += p.N
			sum.Seconds += p.Seconds
			sum.CPUSeconds += p.CPUSeconds
			sum.AnonPeak += p.AnonPeak
			sum.FilePeak += p.FilePeak
			sum.HeapPeak += p.HeapPeak
			sum.HWM += p.HWM
			sum.CgroupPeak += p.CgroupPeak
		}
		writeRow(tw, sum, fmt.Sprintf("sum of %d warm starts alone", len(one)), true)
		var mx Phase
		mx.Impl = "factory"
		for _, p := range one {
			mx.N = max(mx.N, p.N)
			mx.Seconds = max(mx.Seconds, p.Seconds)
			mx.CPUSeconds = max(mx.CPUSeconds, p.CPUSeconds)
			mx.AnonPeak = max(mx.AnonPeak, p.AnonPeak)
			mx.FilePeak = max(mx.FilePeak, p.FilePeak)
			mx.HeapPeak = max(mx.HeapPeak, p.HeapPeak)
			mx.HWM = max(mx.HWM, p.HWM)
			mx.CgroupPeak = max(mx.CgroupPeak, p.CgroupPeak)
		}
		writeRow(tw, mx, "largest warm start alone", true)
		for _, p := range one {
			if p.N == mx.N && largest.N == 0 {
				largest = p
			}
		}
		slowest = mx.Seconds
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if f := mixed; f.Informers > 0 {
		b := "none"
		if f.MemoryBudget > 0 {
			b = fmt.Sprintf("%.0f MiB", mib(uint64(f.MemoryBudget)))
		}
		gate := "no list gate"
		if f.ListSlots > 0 {
			gate = fmt.Sprintf("a list gate of %d relists or replays at once", f.ListSlots)
		}
		fmt.Fprintf(w, "factory: %d informers, memory budget %s, %s, queue budget %d objects\n", f.Informers, b, gate, f.QueueBudget)
	}
	if warm != nil && largest.Seconds > 0 {
		fmt.Fprintf(w, "factory warm start of all %d: %.2f s, %.2fx the warm start of the largest resource alone (%s, %d objects, %.2f s), %.2fx the slowest alone (%.2f s)\n",
			warm.Informers, warm.Seconds, warm.Seconds/largest.Seconds, largest.Resource, largest.N, largest.Seconds, warm.Seconds/slowest, slowest)
	}
	if s := res.Server; s != nil {
		fmt.Fprintf(w, "server alone: %d pods generated, encoded and streamed (WatchList, protobuf) in %.1f s (%.0f pods/s, %.0f MiB), read and discarded; server CPU %.1f s (%.1f µs/pod); server ready in %.1f s, RssAnon %.0f MiB\n",
			s.N, s.Seconds, float64(s.N)/s.Seconds, float64(s.Bytes)/(1<<20), s.CPUSeconds, s.CPUSeconds*1e6/float64(s.N), s.StartSeconds, mib(s.Anon))
	}
	if res.CgroupError != "" {
		fmt.Fprintf(w, "no cgroup: %s\n", res.CgroupError)
	}
	return nil
}

// writeRow writes p; an aggregate has no end or settled figures.
func writeRow(w io.Writer, p Phase, name string, aggregate bool) {
	cg := "-"
	if p.CgroupPeak > 0 {
		cg = fmt.Sprintf("%.0f", mib(p.CgroupPeak))
		if p.CgroupOOM > 0 {
			cg += fmt.Sprintf(" (%d OOM)", p.CgroupOOM)
		}
	}
	limit := "-"
	if p.MemLimit > 0 {
		limit = fmt.Sprintf("%.0f", mib(uint64(p.MemLimit)))
	}
	cells := []string{
		p.Impl, name, fmt.Sprint(p.N),
		fmt.Sprintf("%.2f", p.Seconds), fmt.Sprintf("%.2f", p.CPUSeconds),
		fmt.Sprintf("%.0f", mib(p.AnonPeak)), fmt.Sprintf("%.0f", mib(p.FilePeak)), fmt.Sprintf("%.0f", mib(p.AnonEnd)),
		fmt.Sprintf("%.0f", mib(p.HeapPeak)), fmt.Sprintf("%.1f", mib(p.HeapSettled)), fmt.Sprintf("%.0f", mib(p.HWM)), cg, limit,
	}
	if aggregate {
		cells[7], cells[9] = "-", "-"
	}
	fmt.Fprintln(w, strings.Join(cells, "\t")+"\t")
}
