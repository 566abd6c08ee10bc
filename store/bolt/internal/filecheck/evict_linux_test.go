package filecheck

import (
	"os"
	"syscall"
	"testing"
)

const canEvict = true

// evict drops the file's pages from the page cache (POSIX_FADV_DONTNEED),
// so the next read goes to the disk. It affects this file only.
func evict(tb testing.TB, path string) {
	tb.Helper()
	f, err := os.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	const fadvDontNeed = 4
	if _, _, errno := syscall.Syscall6(syscall.SYS_FADVISE64, f.Fd(), 0, 0, fadvDontNeed, 0, 0); errno != 0 {
		tb.Fatal(errno)
	}
}
