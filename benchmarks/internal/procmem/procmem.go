// Package procmem reads a process's resident memory from /proc, split as
// the kernel accounts it: anonymous pages (the Go heap, stacks, runtime
// structures: what the process itself holds and a memory limit must
// cover) and file-backed pages (a memory-mapped file such as a bbolt
// cache: page cache, which the kernel reclaims under memory pressure and
// reads back when it is touched again).
package procmem

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/warmcache/warmcache/benchmarks/internal/measure"
)

// ErrUnsupported is returned where /proc/<pid>/status does not report the
// split (not Linux, or a kernel older than 4.5).
var ErrUnsupported = errors.New("procmem: /proc status without RssAnon")

// Usage is one reading of a process's resident memory, in bytes.
type Usage struct {
	// Anon is RssAnon: anonymous resident pages.
	Anon uint64
	// File is RssFile: resident file-backed pages, the mapped cache file
	// among them.
	File uint64
	// Shmem is RssShmem.
	Shmem uint64
	// HWM is VmHWM: the peak of the total resident set (Anon + File +
	// Shmem) since the process started, as the kernel recorded it (exact,
	// not sampled).
	HWM uint64
}

// Read returns the current usage of process pid (0: this process).
func Read(pid int) (Usage, error) {
	p := "/proc/self/status"
	if pid > 0 {
		p = "/proc/" + strconv.Itoa(pid) + "/status"
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return Usage{}, fmt.Errorf("procmem: %w", err)
	}
	return parse(b)
}

func parse(b []byte) (Usage, error) {
	var u Usage
	found := 0
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := sc.Bytes()
		colon := bytes.IndexByte(line, ':')
		if colon < 0 {
			continue
		}
		var dst *uint64
		switch string(line[:colon]) {
		case "RssAnon":
			dst = &u.Anon
		case "RssFile":
			dst = &u.File
		case "RssShmem":
			dst = &u.Shmem
		case "VmHWM":
			dst = &u.HWM
		default:
			continue
		}
		f := bytes.Fields(line[colon+1:])
		if len(f) != 2 || string(f[1]) != "kB" {
			return u, fmt.Errorf("procmem: unexpected line %q", line)
		}
		kb, err := strconv.ParseUint(string(f[0]), 10, 64)
		if err != nil {
			return u, fmt.Errorf("procmem: line %q: %w", line, err)
		}
		*dst = kb << 10
		found++
	}
	if found < 4 {
		return u, ErrUnsupported
	}
	return u, nil
}

// DefaultInterval is the sampling interval of Start with a non-positive
// interval.
const DefaultInterval = 10 * time.Millisecond

// Sampler records the largest anonymous and file-backed resident memory
// seen while it runs. Its methods are safe for concurrent use.
type Sampler struct {
	pid  int
	loop *measure.Periodic

	// mu guards peak, last and err.
	mu   sync.Mutex
	peak Usage // field-wise maxima
	last Usage
	err  error
}

// Start samples process pid (0: this process) every interval
// (DefaultInterval if not positive) until Stop. It takes the first sample
// before it returns and fails if that one fails.
func Start(pid int, interval time.Duration) (*Sampler, error) {
	if interval <= 0 {
		interval = DefaultInterval
	}
	s := &Sampler{pid: pid}
	if err := s.sample(); err != nil {
		return nil, err
	}
	s.loop = measure.Every(interval, func() { _ = s.sample() })
	return s, nil
}

func (s *Sampler) sample() error {
	u, err := Read(s.pid)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		if s.err == nil {
			s.err = err
		}
		return err
	}
	s.last = u
	s.peak.Anon = max(s.peak.Anon, u.Anon)
	s.peak.File = max(s.peak.File, u.File)
	s.peak.Shmem = max(s.peak.Shmem, u.Shmem)
	s.peak.HWM = max(s.peak.HWM, u.HWM)
	return nil
}

// Reset forgets the peaks, so that the next ones are of a new phase, and
// takes a sample.
func (s *Sampler) Reset() {
	s.mu.Lock()
	s.peak = Usage{}
	s.mu.Unlock()
	_ = s.sample()
}

// Peak returns the field-wise peaks so far and the last sample.
func (s *Sampler) Peak() (peak, last Usage) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.peak, s.last
}

// Stop takes a last sample, ends the sampling and returns the peaks and the
// first error of a sample, if any. Calling it again returns the same.
func (s *Sampler) Stop() (Usage, error) {
	if s.loop.Stop() {
		_ = s.sample()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.peak, s.err
}

// clockTicks is the unit of the CPU times in /proc/<pid>/stat (USER_HZ,
// 100 on every Linux architecture Go supports).
const clockTicks = 100

// CPU returns the user and system CPU time process pid (0: this process)
// has used.
func CPU(pid int) (time.Duration, error) {
	p := "/proc/self/stat"
	if pid > 0 {
		p = "/proc/" + strconv.Itoa(pid) + "/stat"
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return 0, fmt.Errorf("procmem: %w", err)
	}
	return parseStatCPU(b)
}

// parseStatCPU returns utime+stime of a /proc/<pid>/stat line. The command
// name (field 2) is in parentheses and may hold spaces: fields are counted
// after its closing parenthesis.
func parseStatCPU(b []byte) (time.Duration, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("procmem: unexpected stat %q", b)
	}
	f := bytes.Fields(b[i+1:])
	// After the name: state (3), ..., utime (14), stime (15).
	if len(f) < 13 {
		return 0, fmt.Errorf("procmem: unexpected stat %q", b)
	}
	var ticks uint64
	for _, s := range f[11:13] {
		v, err := strconv.ParseUint(string(s), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("procmem: stat CPU %q: %w", s, err)
		}
		ticks += v
	}
	return time.Duration(ticks) * time.Second / clockTicks, nil
}
