//go:build !unix

package measure

import "time"

// ProcessCPU returns the CPU time (user and system) this process has used
// so far, all threads included, and true; on systems where it is unknown
// it returns 0 and false.
func ProcessCPU() (time.Duration, bool) { return 0, false }
