package hostload

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"
)

func TestParseStat(t *testing.T) {
	tests := []struct {
		name        string
		in          string
		busy, steal time.Duration
		ok          bool
	}{
		// user nice system idle iowait irq softirq steal guest guest_nice
		{"linux", "cpu  100 5 50 9000 40 3 2 7 0 0\ncpu0 50 2 25 4500 20 1 1 3 0 0\n", 1600 * time.Millisecond, 70 * time.Millisecond, true},
		{"cpu lines only per CPU", "cpu0 1 2 3 4 5 6 7 8\n", 0, 0, false},
		{"short", "cpu 1 2 3\n", 0, 0, false},
		{"not numbers", "cpu a b c d e f g h\n", 0, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := parseStat([]byte(tt.in))
			if (err == nil) != tt.ok || c.Busy != tt.busy || c.Steal != tt.steal {
				t.Errorf("parseStat = %+v, %v; want busy %v, steal %v, ok %v", c, err, tt.busy, tt.steal, tt.ok)
			}
		})
	}
}

func TestOthers(t *testing.T) {
	before := CPU{Busy: 10 * time.Second, Steal: time.Second}
	after := CPU{Busy: 14 * time.Second, Steal: 1500 * time.Millisecond}
	if o, s := Others(before, after, 3*time.Second); o != time.Second || s != 500*time.Millisecond {
		t.Errorf("Others = %v, %v; want 1s, 500ms", o, s)
	}
	// The process's own time, finer than the machine's ticks, may exceed
	// what the machine counted.
	if o, _ := Others(before, after, 5*time.Second); o != 0 {
		t.Errorf("Others = %v, want 0", o)
	}
}

// TestReadCPUCounts checks that the machine's busy time grows by at least
// what this process spins, less a tick.
func TestReadCPUCounts(t *testing.T) {
	before, err := ReadCPU()
	if errors.Is(err, ErrUnsupported) && runtime.GOOS != "linux" {
		t.Skip("no /proc/stat")
	}
	if err != nil {
		t.Fatal(err)
	}
	spin := 200 * time.Millisecond
	for start := time.Now(); time.Since(start) < spin; {
	}
	after, err := ReadCPU()
	if err != nil {
		t.Fatal(err)
	}
	if after.Busy-before.Busy < spin/2 {
		t.Errorf("busy grew by %v while spinning %v", after.Busy-before.Busy, spin)
	}
}

func TestWarmAndResident(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("mincore is read on Linux only")
	}
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if r, err := Resident(empty); err != nil || r != 1 {
		t.Errorf("Resident(empty) = %v, %v; want 1", r, err)
	}
	path := filepath.Join(dir, "file")
	if err := os.WriteFile(path, make([]byte, 1<<20+1), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := Warm(path); err != nil {
		t.Fatal(err)
	}
	if r, err := Resident(path); err != nil || r < 0.99 {
		t.Errorf("Resident after Warm = %v, %v; want 1", r, err)
	}
	if _, err := Resident(filepath.Join(dir, "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Resident(missing) = %v, want not exist", err)
	}
}

func TestBusyShare(t *testing.T) {
	before := CPU{Busy: 10 * time.Second}
	for _, tt := range []struct {
		after   time.Duration
		elapsed time.Duration
		want    float64
	}{
		{11 * time.Second, 2 * time.Second, 0.25},
		{10 * time.Second, 2 * time.Second, 0},
		{20 * time.Second, 2 * time.Second, 1},
		{11 * time.Second, 0, 0},
	} {
		if got := BusyShare(before, CPU{Busy: tt.after}, tt.elapsed, 2); got != tt.want {
			t.Errorf("BusyShare(busy +%v over %v on 2 CPUs) = %v, want %v", tt.after-before.Busy, tt.elapsed, got, tt.want)
		}
	}
}

// TestWaitIdleGivesUp checks that WaitIdle returns by its timeout on a
// machine it cannot find idle (no share of the CPUs is below 0).
func TestWaitIdleGivesUp(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("no /proc/stat")
	}
	idle, _, err := WaitIdle(context.Background(), IdleOptions{MaxBusy: -1, Window: 10 * time.Millisecond, Timeout: 30 * time.Millisecond})
	if err != nil || idle {
		t.Errorf("WaitIdle = %v, %v; want not idle", idle, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := WaitIdle(ctx, IdleOptions{MaxBusy: -1, Window: time.Hour}); !errors.Is(err, context.Canceled) {
		t.Errorf("WaitIdle after cancel: %v", err)
	}
}
