//go:build !linux

package bolt

// dropResident does nothing outside Linux: the mapping's pages stay
// resident until the file is closed.
func dropResident(addr uintptr, n int64) error { return nil }
