package bolt

import "golang.org/x/sys/unix"

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
