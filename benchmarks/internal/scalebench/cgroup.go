package scalebench

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// ErrNoCgroup is returned when no memory cgroup can be created here.
var ErrNoCgroup = errors.New("scalebench: cannot create a memory cgroup")

// cgroup is a memory cgroup created under this process's own, limiting the
// memory of the processes that join it: anonymous memory and page cache
// together (a cgroup is charged for the page cache its processes bring in,
// and reclaims it under its limit).
type cgroup struct {
	dir string
	v2  bool
}

// newCgroup creates a child cgroup of this process's memory cgroup with a
// memory limit of limit bytes.
func newCgroup(name string, limit int64) (*cgroup, error) {
	parent, v2, err := ownMemoryCgroup()
	if err != nil {
		return nil, err
	}
	cg := &cgroup{dir: filepath.Join(parent, name), v2: v2}
	if err := os.Mkdir(cg.dir, 0o755); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNoCgroup, err)
	}
	file := "memory.limit_in_bytes"
	if v2 {
		file = "memory.max"
	}
	if err := os.WriteFile(filepath.Join(cg.dir, file), []byte(strconv.FormatInt(limit, 10)), 0o644); err != nil {
		return nil, errors.Join(fmt.Errorf("%w: set the limit: %w", ErrNoCgroup, err), os.Remove(cg.dir))
	}
	return cg, nil
}

// ownMemoryCgroup returns the directory of this process's memory cgroup.
func ownMemoryCgroup() (dir string, v2 bool, err error) {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", false, fmt.Errorf("%w: %w", ErrNoCgroup, err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 {
			continue
		}
		for _, c := range strings.Split(f[1], ",") {
			if c == "memory" {
				return filepath.Join("/sys/fs/cgroup/memory", f[2]), false, nil
			}
		}
	}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok {
			if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
				return filepath.Join("/sys/fs/cgroup", p), true, nil
			}
		}
	}
	return "", false, fmt.Errorf("%w: no memory controller in /proc/self/cgroup", ErrNoCgroup)
}

// usage returns the cgroup's peak memory charge and its number of OOM
// kills.
func (cg *cgroup) usage() (peak uint64, ooms int) {
	peakFile, events, key := "memory.max_usage_in_bytes", "memory.oom_control", "oom_kill"
	if cg.v2 {
		peakFile, events = "memory.peak", "memory.events"
	}
	if b, err := os.ReadFile(filepath.Join(cg.dir, peakFile)); err == nil {
		peak, _ = strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	}
	if b, err := os.ReadFile(filepath.Join(cg.dir, events)); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, key+" "); ok {
				ooms, _ = strconv.Atoi(strings.TrimSpace(v))
			}
		}
	}
	return peak, ooms
}

// remove removes the cgroup; its processes must have exited.
func (cg *cgroup) remove() error { return os.Remove(cg.dir) }
