package measure

import "time"

// Stopwatch accumulates the time between StartTimer and StopTimer calls,
// like testing.B's timer. The zero value is stopped at zero. It is not safe
// for concurrent use.
type Stopwatch struct {
	elapsed time.Duration
	start   time.Time
	running bool
}

// StartTimer starts the stopwatch; it does nothing if it runs.
func (s *Stopwatch) StartTimer() {
	if !s.running {
		s.start = time.Now()
		s.running = true
	}
}

// StopTimer stops the stopwatch; it does nothing if it is stopped.
func (s *Stopwatch) StopTimer() {
	if s.running {
		s.elapsed += time.Since(s.start)
		s.running = false
	}
}

// Elapsed returns the accumulated time, the current run included.
func (s *Stopwatch) Elapsed() time.Duration {
	if s.running {
		return s.elapsed + time.Since(s.start)
	}
	return s.elapsed
}

// Reset stops the stopwatch and sets it to zero.
func (s *Stopwatch) Reset() { *s = Stopwatch{} }
