// Package machine describes the machine a benchmark runs on, so that the
// benchmark programs can print it beside their figures and label figures
// measured while other processes kept the CPUs busy.
package machine

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
)

// Info is a snapshot of the machine.
type Info struct {
	GoVersion  string
	GOOS       string
	GOARCH     string
	NumCPU     int
	GOMAXPROCS int
	// Load1, Load5 and Load15 are the load averages; HasLoad is false
	// where the system does not report them.
	Load1, Load5, Load15 float64
	HasLoad              bool
}

// Read returns the current machine description.
func Read() Info {
	i := Info{
		GoVersion:  runtime.Version(),
		GOOS:       runtime.GOOS,
		GOARCH:     runtime.GOARCH,
		NumCPU:     runtime.NumCPU(),
		GOMAXPROCS: runtime.GOMAXPROCS(0),
	}
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		i.Load1, i.Load5, i.Load15, i.HasLoad = parseLoadavg(string(b))
	}
	return i
}

// parseLoadavg parses the first three fields of /proc/loadavg.
func parseLoadavg(s string) (l1, l5, l15 float64, ok bool) {
	f := strings.Fields(s)
	if len(f) < 3 {
		return 0, 0, 0, false
	}
	var v [3]float64
	for i := range v {
		x, err := strconv.ParseFloat(f[i], 64)
		if err != nil {
			return 0, 0, 0, false
		}
		v[i] = x
	}
	return v[0], v[1], v[2], true
}

// Busy reports whether other processes kept the machine busy: a 1-minute
// load average of at least half the CPUs, measured before the benchmark
// starts (the benchmark's own load is not in it yet).
func (i Info) Busy() bool {
	return i.HasLoad && i.Load1 >= float64(i.NumCPU)/2
}

func (i Info) String() string {
	s := fmt.Sprintf("%s %s/%s, %d CPUs, GOMAXPROCS=%d", i.GoVersion, i.GOOS, i.GOARCH, i.NumCPU, i.GOMAXPROCS)
	if i.HasLoad {
		s += fmt.Sprintf(", load average %.2f %.2f %.2f", i.Load1, i.Load5, i.Load15)
	}
	return s
}

// Label returns "" on a quiet machine and a warning to print beside the
// figures on a busy one.
func (i Info) Label() string {
	if !i.Busy() {
		return ""
	}
	return fmt.Sprintf("MEASURED UNDER LOAD: 1-minute load average %.2f on %d CPUs before the run; figures are pessimistic and noisy", i.Load1, i.NumCPU)
}

// busyAfter reports whether, after a run that kept every CPU busy itself
// (adding about NumCPU to the load average), the 1-minute load average
// shows other processes at work too: at least half the CPUs more.
func (i Info) busyAfter() bool {
	return i.HasLoad && i.Load1 >= float64(i.NumCPU)*3/2
}

// RunLabel returns "" when the machine was quiet before a run (before) and
// stayed so during it (after, read at its end), and otherwise a warning to
// print beside the figures.
func RunLabel(before, after Info) string {
	if l := before.Label(); l != "" {
		return l
	}
	if after.busyAfter() {
		return fmt.Sprintf("MEASURED UNDER LOAD: 1-minute load average %.2f on %d CPUs at the end of the run, more than the run itself accounts for; figures are pessimistic and noisy", after.Load1, after.NumCPU)
	}
	return ""
}
