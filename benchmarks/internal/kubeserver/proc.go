package kubeserver

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/warmcache/warmcache/benchmarks/internal/procmem"
)

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
		for _, f := range strings.Fields(string(b)) {
			pid, err := strconv.Atoi(f)
			if err != nil || pid <= 0 {
				continue
			}
			cpu, err := procmem.CPU(pid)
			if err != nil {
				continue // ended meanwhile
			}
			total += cpu
			found = true
		}
	}
	if !found {
		return 0, fmt.Errorf("kubeserver: no child process found in /proc/self/task/*/children")
	}
	return total, nil
}
