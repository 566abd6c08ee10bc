package kubeserver

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// clockTicks is the unit of the CPU times in /proc/<pid>/stat (USER_HZ,
// 100 on every Linux architecture Go supports).
const clockTicks = 100

// childrenCPU returns the user and system CPU time of this process's
// children, alive: etcd, kube-apiserver and the helper. It reads the
// children of each of this process's threads (/proc/self/task/*/children)
// rather than every process's stat: it runs at every collection of a
// churn.
func childrenCPU() (time.Duration, error) {
	lists, err := filepath.Glob("/proc/self/task/*/children")
	if err != nil {
		return 0, fmt.Errorf("kubeserver: %w", err)
	}
	var total time.Duration
	found := false
	for _, l := range lists {
		b, err := os.ReadFile(l)
		if err != nil {
			continue // the thread ended meanwhile
		}
		for _, pid := range strings.Fields(string(b)) {
			stat, err := os.ReadFile("/proc/" + pid + "/stat")
			if err != nil {
				continue // ended meanwhile
			}
			if _, cpu, ok := parseStat(stat); ok {
				total += cpu
				found = true
			}
		}
	}
	if !found {
		return 0, fmt.Errorf("kubeserver: no child process found in /proc/self/task/*/children")
	}
	return total, nil
}

// parseStat returns the parent pid and utime+stime of a /proc/<pid>/stat
// line. The command name (field 2) is in parentheses and may hold spaces:
// fields are counted after its closing parenthesis.
func parseStat(b []byte) (ppid int, cpu time.Duration, ok bool) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0, false
	}
	f := bytes.Fields(b[i+1:])
	// After the name: state (3), ppid (4), ..., utime (14), stime (15).
	if len(f) < 13 {
		return 0, 0, false
	}
	ppid, err1 := strconv.Atoi(string(f[1]))
	utime, err2 := strconv.ParseInt(string(f[11]), 10, 64)
	stime, err3 := strconv.ParseInt(string(f[12]), 10, 64)
	if err1 != nil || err2 != nil || err3 != nil {
		return 0, 0, false
	}
	return ppid, time.Duration(utime+stime) * time.Second / clockTicks, true
}
