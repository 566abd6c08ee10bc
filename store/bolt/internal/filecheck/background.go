package filecheck

import (
	"context"
	"sync"
	"time"
)

// Verdict is the state of a Background check.
type Verdict struct {
	// Done: the check has ended, with Err (nil for a sound file). AtOpen:
	// the file was checked before the Background began (Checked); else
	// the check ran in the background for Duration.
	Done, AtOpen bool
	Err          error
	Duration     time.Duration
	// Skipped says why the check did not walk the file.
	Skipped string
}

// Background is a check of a file run in a goroutine of its own, whose
// verdict its owner reads (Verdict) or waits for (Done). It is safe for
// concurrent use.
type Background struct {
	cancel context.CancelFunc
	done   chan struct{} // closed when the verdict is in res

	mu  sync.Mutex // guards res
	res Verdict
}

// Checked returns a Background whose verdict is in: the file was checked
// in full before (AtOpen).
func Checked() *Background {
	b := &Background{cancel: func() {}, done: make(chan struct{}), res: Verdict{Done: true, AtOpen: true}}
	close(b.done)
	return b
}

// NewBackground returns a Background whose check has not begun (Run).
func NewBackground() *Background {
	return &Background{cancel: func() {}, done: make(chan struct{})}
}

// Run runs check in a goroutine of its own, with a context that Stop
// cancels, and gives its error and duration to judge, whose Verdict (Done
// set) is what Verdict returns once Done is closed. It is called once,
// after the Background is where judge's callers find it.
func (b *Background) Run(check func(ctx context.Context) error, judge func(err error, d time.Duration) Verdict) {
	ctx, cancel := context.WithCancel(context.Background())
	b.cancel = cancel
	go func() {
		start := time.Now()
		err := check(ctx)
		res := judge(err, time.Since(start))
		res.Done = true
		b.mu.Lock()
		b.res = res
		b.mu.Unlock()
		close(b.done)
	}()
}

// Verdict returns the state of the check, without waiting for it.
func (b *Background) Verdict() Verdict {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.res
}

// Done is closed once the verdict is in.
func (b *Background) Done() <-chan struct{} { return b.done }

// Stop cancels the check and waits for its verdict; the check must have
// been Run (or the Background made by Checked).
func (b *Background) Stop() {
	b.cancel()
	<-b.done
}
