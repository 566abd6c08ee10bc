package mapped

import (
	"strconv"

	"golang.org/x/sys/unix"
)

// InitialSize is the size of bbolt's first mapping of the file,
// virtual address space only (the file grows as written): 256 MiB on
// 64-bit platforms. bbolt otherwise maps a new file at 32 KiB and maps it
// again each time a commit outgrows the mapping, doubling it: each remap
// copies every key and value of the commit's changed nodes to the heap,
// and waits for every open read transaction (a long list) to end, while
// the writer holds its lock. With it, a file remaps only past 256 MiB.
// Not on Windows, where bbolt would grow the file itself to that size.
const InitialSize = (strconv.IntSize / 64) * 256 << 20

// dropResident drops the resident pages of the n bytes of the shared file
// mapping at addr from the process's page tables (MADV_DONTNEED).
func dropResident(addr uintptr, n int64) error {
	if n <= 0 {
		return nil
	}
	if _, _, errno := unix.Syscall(unix.SYS_MADVISE, addr, uintptr(n), unix.MADV_DONTNEED); errno != 0 {
		return errno
	}
	return nil
}
