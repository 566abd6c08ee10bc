package progress

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/warmcache/warmcache/cmd/snapshot/internal/golden"
)

// fakeClock is a clock the test advances by hand.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time          { return c.t }
func (c *fakeClock) advance(d time.Duration) { c.t = c.t.Add(d) }
func newClock() *fakeClock                   { return &fakeClock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)} }
func visible(s string) string                { return strings.NewReplacer("\r", "<CR>", "\x1b[K", "<EL>").Replace(s) }
func lines(s string) []byte                  { return []byte(strings.ReplaceAll(visible(s), "<CR>", "\n<CR>") + "\n") }

func TestNilBarIgnoresCalls(t *testing.T) {
	var b *Bar
	b.Add(10)
	b.Finish()
}

func TestRedrawsAreThrottled(t *testing.T) {
	clock := newClock()
	var out bytes.Buffer
	b := New(&out, Options{Label: "list pods", Total: 200, Now: clock.now, Interval: time.Second, Width: 10})
	b.Add(1) // first Add draws at once
	b.Add(49)
	b.Add(50) // within the interval: no redraw
	clock.advance(time.Second)
	b.Add(100) // 200/200
	b.Finish()
	b.Add(5) // ignored after Finish
	b.Finish()
	golden.Check(t, "throttled", lines(out.String()))
	if got := strings.Count(out.String(), "\r"); got != 3 {
		t.Errorf("%d carriage returns, want 3 (two draws and the erase): %q", got, visible(out.String()))
	}
}

func TestRender(t *testing.T) {
	tests := []struct {
		name    string
		opts    Options
		current int64
		want    string
	}{
		{"empty", Options{Total: 4, Width: 4}, 0, "[>   ]   0% 0/4"},
		{"half", Options{Label: "x", Total: 4, Width: 4}, 2, "x [==> ]  50% 2/4"},
		{"full", Options{Total: 4, Width: 4}, 4, "[====] 100% 4/4"},
		{"over total is capped", Options{Total: 4, Width: 4}, 9, "[====] 100% 9/4"},
		{"no total: counter", Options{Label: "verify"}, 1234, "verify 1234"},
		{"bytes", Options{Total: 3 << 20, Width: 3, Bytes: true}, 1 << 20, "[=> ]  33% 1.0 MiB/3.0 MiB"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := New(nil, tt.opts)
			b.current = tt.current
			if got := b.render(); got != tt.want {
				t.Errorf("render() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestFinishWithoutDrawWritesNothing(t *testing.T) {
	var out bytes.Buffer
	New(&out, Options{Total: 1}).Finish()
	if out.Len() != 0 {
		t.Errorf("Finish wrote %q without a draw", out.String())
	}
}

func TestConcurrentAdds(t *testing.T) {
	var out bytes.Buffer
	b := New(&out, Options{Total: 1000, Interval: time.Nanosecond})
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 250 {
				b.Add(1)
			}
		}()
	}
	wg.Wait()
	b.Finish()
	if b.current != 1000 {
		t.Errorf("current = %d, want 1000", b.current)
	}
}

func TestSize(t *testing.T) {
	tests := []struct {
		n    int64
		want string
	}{
		{0, "0 B"}, {1023, "1023 B"}, {1024, "1.0 KiB"}, {1536, "1.5 KiB"},
		{5 << 20, "5.0 MiB"}, {3 << 30, "3.0 GiB"}, {1 << 62, "4.0 EiB"},
	}
	for _, tt := range tests {
		if got := Size(tt.n); got != tt.want {
			t.Errorf("Size(%d) = %q, want %q", tt.n, got, tt.want)
		}
	}
}
