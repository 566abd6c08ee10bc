//go:build !linux

package mapped

// InitialSize is bbolt's default (see mapped_linux.go): on Windows
// bbolt grows the file to its mapping's size.
const InitialSize = 0

// dropResident does nothing outside Linux: the mapping's pages stay
// resident until the file is closed.
func dropResident(addr uintptr, n int64) error { return nil }
