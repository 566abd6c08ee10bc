package informerbench

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"
)

// startProfile starts a CPU profile of impl's phase into dir, or does
// nothing when dir is empty. The returned function stops it and closes the
// file.
func startProfile(dir, impl, phase string) (stop func() error, err error) {
	if dir == "" {
		return func() error { return nil }, nil
	}
	f, err := os.Create(filepath.Join(dir, impl+"-"+phase+".pprof"))
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("CPU profile of %s's %s: %w", impl, phase, err)
	}
	return func() error {
		pprof.StopCPUProfile()
		return f.Close()
	}, nil
}
