//go:build !linux

package hostload

// Resident returns ErrUnsupported: mincore is read on Linux only.
func Resident(string) (float64, error) { return 0, ErrUnsupported }
