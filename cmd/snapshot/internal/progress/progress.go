// Package progress draws a one-line progress bar on a terminal.
//
// A Bar redraws its line in place (carriage return, no newline) at most once
// per Options.Interval, and erases it on Finish, so that what else is
// written to the terminal stays clean. A nil *Bar is valid and draws
// nothing: callers create a bar only when the stream is a terminal and use
// nil otherwise, without checks at every call.
package progress

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
)

// Options configures New.
type Options struct {
	// Label is written before the bar, for example "list pods". Default "".
	Label string
	// Total is the count that means 100%. Zero or negative draws a counter
	// without a bar. Default 0.
	Total int64
	// Bytes formats counts as byte sizes (KiB, MiB...). Default false:
	// plain numbers.
	Bytes bool
	// Width is the number of cells of the bar. Default 30.
	Width int
	// Interval is the least time between two redraws. Default 100ms.
	Interval time.Duration
	// Now is the clock that paces redraws. Default time.Now.
	Now func() time.Time
}

// Bar is a progress bar on one terminal line. Its methods are safe for
// concurrent use; a nil *Bar ignores every call.
type Bar struct {
	w    io.Writer
	opts Options

	// mu guards everything below and serialises writes to w.
	mu       sync.Mutex
	current  int64
	lastDraw time.Time
	drawn    bool // something is on the line
	done     bool
}

// New returns a bar drawing on w, which should be a terminal. Nothing is
// drawn before the first Add.
func New(w io.Writer, opts Options) *Bar {
	if opts.Width <= 0 {
		opts.Width = 30
	}
	if opts.Interval <= 0 {
		opts.Interval = 100 * time.Millisecond
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Bar{w: w, opts: opts}
}

// Add advances the bar by n and redraws it if Interval has passed since the
// last redraw. Calls after Finish are ignored.
func (b *Bar) Add(n int64) {
	b.whileLive(func() {
		b.current += n
		now := b.opts.Now()
		if b.drawn && now.Sub(b.lastDraw) < b.opts.Interval {
			return
		}
		b.lastDraw = now
		b.drawLocked()
	})
}

// Finish erases the bar's line. It is idempotent.
func (b *Bar) Finish() {
	b.whileLive(func() {
		b.done = true
		if b.drawn {
			// Carriage return, then erase to the end of the line.
			_, _ = io.WriteString(b.w, "\r\x1b[K")
		}
	})
}

// whileLive calls fn with b.mu held, unless b is nil or finished: the
// calls such a bar ignores.
func (b *Bar) whileLive(fn func()) {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.done {
		fn()
	}
}

// drawLocked writes the current state over the line. b.mu must be held.
func (b *Bar) drawLocked() {
	b.drawn = true
	_, _ = io.WriteString(b.w, "\r"+b.render()+"\x1b[K")
}

// render returns the line for the current state.
func (b *Bar) render() string {
	var s strings.Builder
	if b.opts.Label != "" {
		s.WriteString(b.opts.Label)
		s.WriteByte(' ')
	}
	if b.opts.Total <= 0 {
		s.WriteString(b.count(b.current))
		return s.String()
	}
	frac := float64(b.current) / float64(b.opts.Total)
	frac = min(max(frac, 0), 1)
	full := int(frac * float64(b.opts.Width))
	s.WriteByte('[')
	s.WriteString(strings.Repeat("=", full))
	if full < b.opts.Width {
		s.WriteByte('>')
		s.WriteString(strings.Repeat(" ", b.opts.Width-full-1))
	}
	s.WriteByte(']')
	fmt.Fprintf(&s, " %3d%% %s/%s", int(frac*100), b.count(b.current), b.count(b.opts.Total))
	return s.String()
}

func (b *Bar) count(n int64) string {
	if b.opts.Bytes {
		return Size(n)
	}
	return fmt.Sprint(n)
}

// Size formats a byte count with a binary unit: "512 B", "1.5 KiB",
// "12.0 MiB".
func Size(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 5; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
