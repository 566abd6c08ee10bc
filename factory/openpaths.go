package factory

import (
	"path/filepath"
	"sync"
)

// openFiles counts, by absolute path, the cache files the factories of
// this process have open, so that New tells a file locked by another
// Factory of the same process from one locked by another process: to
// bolt's file lock both are the same conflict (bolt.ErrLocked).
var openFiles = struct {
	mu    sync.Mutex
	count map[string]int
}{count: map[string]int{}}

// absPath is path made absolute, or cleaned when that fails.
func absPath(path string) string {
	if abs, err := filepath.Abs(path); err == nil {
		return abs
	}
	return filepath.Clean(path)
}

// fileOpened records that a factory of this process opened path.
func fileOpened(path string) {
	openFiles.mu.Lock()
	defer openFiles.mu.Unlock()
	openFiles.count[path]++
}

// fileClosed records that a factory of this process closed path.
func fileClosed(path string) {
	openFiles.mu.Lock()
	defer openFiles.mu.Unlock()
	if openFiles.count[path]--; openFiles.count[path] <= 0 {
		delete(openFiles.count, path)
	}
}

// fileOpenHere reports whether a factory of this process has path open.
func fileOpenHere(path string) bool {
	openFiles.mu.Lock()
	defer openFiles.mu.Unlock()
	return openFiles.count[path] > 0
}
