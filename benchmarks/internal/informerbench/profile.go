package informerbench

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"
)

// startProfile starts a CPU profile of impl's phase into dir, or does
// nothing when dir is empty. It also writes the process's allocation
// profile at the start and at the end of the phase (IMPL-PHASE-allocs-
// start.pprof and -end.pprof), so that `go tool pprof -base start end`
// shows what the phase allocated. The returned function stops the CPU
// profile, writes the second allocation profile and closes the files.
func startProfile(dir, impl, phase string) (stop func() error, err error) {
	if dir == "" {
		return func() error { return nil }, nil
	}
	base := filepath.Join(dir, impl+"-"+phase)
	if err := writeAllocs(base + "-allocs-start.pprof"); err != nil {
		return nil, err
	}
	f, err := os.Create(base + ".pprof")
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("CPU profile of %s's %s: %w", impl, phase, err)
	}
	return func() error {
		pprof.StopCPUProfile()
		return errors.Join(f.Close(), writeAllocs(base+"-allocs-end.pprof"))
	}, nil
}

// writeAllocs writes the allocation profile (cumulative since the process
// started) to path.
func writeAllocs(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	err = pprof.Lookup("allocs").WriteTo(f, 0)
	return errors.Join(err, f.Close())
}
