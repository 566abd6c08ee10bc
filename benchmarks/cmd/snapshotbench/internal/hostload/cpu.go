// Package hostload tells what else a machine did while a benchmark ran,
// so that a slow run can be told from a slow program: the CPU time that
// other processes took (from /proc/stat), and how much of a file the page
// cache held before a run (mincore), with a way to load it there first.
// ReadCPU and Resident read what Linux reports (/proc/stat, mincore):
// elsewhere they return ErrUnsupported.
package hostload

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"
)

// ErrUnsupported is returned where the machine does not report what a
// function reads.
var ErrUnsupported = errors.New("hostload: not supported on this system")

// clockTick is the unit of /proc/stat's counters (USER_HZ), 100 Hz on
// every Linux architecture Go supports.
const clockTick = 10 * time.Millisecond

// CPU is a reading of the time the machine's CPUs spent busy (user,
// nice, system, irq, softirq) and stolen by the hypervisor for other
// machines, summed over CPUs, since boot.
type CPU struct {
	Busy, Steal time.Duration
}

// ReadCPU reads the machine's CPU counters.
func ReadCPU() (CPU, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return CPU{}, fmt.Errorf("%w: %w", ErrUnsupported, err)
	}
	return parseStat(b)
}

// parseStat parses the aggregate "cpu" line of /proc/stat: user nice
// system idle iowait irq softirq steal ...
func parseStat(b []byte) (CPU, error) {
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := bytes.Fields(sc.Bytes())
		if len(f) < 9 || string(f[0]) != "cpu" {
			continue
		}
		var v [8]uint64
		for i := range v {
			n, err := strconv.ParseUint(string(f[i+1]), 10, 64)
			if err != nil {
				return CPU{}, fmt.Errorf("hostload: /proc/stat field %d %q: %w", i+1, f[i+1], err)
			}
			v[i] = n
		}
		busy := v[0] + v[1] + v[2] + v[5] + v[6]
		return CPU{Busy: time.Duration(busy) * clockTick, Steal: time.Duration(v[7]) * clockTick}, nil
	}
	return CPU{}, fmt.Errorf("%w: no cpu line in /proc/stat", ErrUnsupported)
}

// Others is the CPU time other processes took between readings before
// and after, in which a measured process took own: the machine's busy
// time less own, never negative (the counters tick at clockTick, the
// process's own at a finer grain). Steal is the time the hypervisor gave
// other machines.
func Others(before, after CPU, own time.Duration) (others, steal time.Duration) {
	return max(after.Busy-before.Busy-own, 0), max(after.Steal-before.Steal, 0)
}
