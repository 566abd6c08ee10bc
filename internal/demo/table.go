package demo

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/warmcache/warmcache/internal/democtl"
)

// RunResult is what one run of the demo controller measured: its own
// stats, and the requests the apiserver counted for pods while it ran.
type RunResult struct {
	// Stats are the controller's stats file.
	Stats democtl.Stats
	// Lists and WatchLists are the LIST requests and completed WatchList
	// streams for pods the apiserver served during the run (from its
	// /metrics).
	Lists, WatchLists float64
	// Wall is the time from the process start to its exit.
	Wall time.Duration
	// AtSync compares what the handler had been told when the controller
	// reported synced (its initial adds) with the server's pods: the
	// keys missing, extra or at another resourceVersion (0: exactly a
	// LIST).
	AtSync int
}

// WriteTable writes the side-by-side comparison of a cold and a warm run.
// fileSize is the cache file's size after the warm run.
func WriteTable(w io.Writer, cold, warm RunResult, fileSize int64) error {
	tw := tabwriter.NewWriter(w, 0, 0, 3, ' ', tabwriter.AlignRight)
	row := func(name string, f func(RunResult) string) {
		fmt.Fprintf(tw, "%s\t%s\t%s\t\n", name, f(cold), f(warm))
	}
	fmt.Fprintf(tw, "\tcold start\twarm start\t\n")
	row("time to synced", func(r RunResult) string { return seconds(r.Stats.SyncedSeconds) })
	row("handler's view at synced", func(r RunResult) string {
		if r.AtSync == 0 {
			return "= the server's"
		}
		return fmt.Sprintf("%d pods differ", r.AtSync)
	})
	row("LIST requests (apiserver)", func(r RunResult) string { return fmt.Sprint(r.Lists) })
	row("WatchList streams (apiserver)", func(r RunResult) string { return fmt.Sprint(r.WatchLists) })
	row("bytes received", func(r RunResult) string { return bytes(r.Stats.BytesReceived) })
	row("peak heap", func(r RunResult) string { return bytes(int64(r.Stats.PeakHeapBytes)) })
	row("steady heap", func(r RunResult) string { return bytes(int64(r.Stats.SteadyHeapBytes)) })
	row("events delivered", func(r RunResult) string { return fmt.Sprint(r.Stats.Events.Total()) })
	row("  initial adds", func(r RunResult) string { return fmt.Sprint(r.Stats.Events.InitialAdds) })
	row("  adds / updates / deletes", func(r RunResult) string {
		e := r.Stats.Events
		return fmt.Sprintf("%d / %d / %d", e.Adds, e.Updates, e.Deletes)
	})
	// The informer counts its first list as a relist (into an empty store).
	row("lists of every pod", func(r RunResult) string { return fmt.Sprint(r.Stats.Relists) })
	fmt.Fprintf(tw, "cache file\t\t%s\t\n", bytes(fileSize))
	return tw.Flush()
}

func seconds(s float64) string {
	return (time.Duration(s * float64(time.Second))).Round(10 * time.Millisecond).String()
}

// bytes formats n in KiB, MiB or GiB with one decimal.
func bytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	f, i := float64(n), 0
	for f >= unit && i < 3 {
		f /= unit
		i++
	}
	return fmt.Sprintf("%.1f %s", f, strings.Fields("B KiB MiB GiB")[i])
}
