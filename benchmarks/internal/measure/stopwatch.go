package measure

import "time"

// Stopwatch accumulates the wall-clock time, and the CPU time of the whole
// process, between StartTimer and StopTimer calls, like testing.B's timer.
// The CPU time tells what the timed work cost on a machine shared with
// other processes, where wall-clock time also counts waiting for a CPU.
// The zero value is stopped at zero. It is not safe for concurrent use.
type Stopwatch struct {
	elapsed, cpu time.Duration
	start        time.Time
	startCPU     time.Duration
	running      bool
}

// StartTimer starts the stopwatch; it does nothing if it runs.
func (s *Stopwatch) StartTimer() {
	if !s.running {
		s.startCPU, _ = ProcessCPU()
		s.start = time.Now()
		s.running = true
	}
}

// StopTimer stops the stopwatch; it does nothing if it is stopped.
func (s *Stopwatch) StopTimer() {
	if s.running {
		s.elapsed += time.Since(s.start)
		now, _ := ProcessCPU()
		s.cpu += now - s.startCPU
		s.running = false
	}
}

// Elapsed returns the accumulated wall-clock time, the current run
// included.
func (s *Stopwatch) Elapsed() time.Duration {
	if s.running {
		return s.elapsed + time.Since(s.start)
	}
	return s.elapsed
}

// CPU returns the accumulated CPU time of the process, the current run
// included; 0 where ProcessCPU is unknown.
func (s *Stopwatch) CPU() time.Duration {
	if s.running {
		now, _ := ProcessCPU()
		return s.cpu + now - s.startCPU
	}
	return s.cpu
}

// Reset stops the stopwatch and sets it to zero.
func (s *Stopwatch) Reset() { *s = Stopwatch{} }
