package filecheck

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestBackground checks that a Background's verdict is judge's, Done set,
// once Done is closed and not before, and that Stop cancels a check that
// runs and waits for its verdict.
func TestBackground(t *testing.T) {
	t.Run("verdict", func(t *testing.T) {
		errBad := errors.New("bad page")
		release := make(chan struct{})
		b := NewBackground()
		b.Run(func(context.Context) error {
			<-release
			return errBad
		}, func(err error, d time.Duration) Verdict {
			return Verdict{Err: err, Duration: d, Skipped: "judged"}
		})
		if v := b.Verdict(); v.Done {
			t.Fatalf("verdict %+v while the check runs", v)
		}
		close(release)
		<-b.Done()
		if v := b.Verdict(); !v.Done || !errors.Is(v.Err, errBad) || v.Skipped != "judged" || v.AtOpen {
			t.Fatalf("verdict %+v, want judge's, Done", v)
		}
		b.Stop() // the check has ended: returns at once
	})
	t.Run("stop", func(t *testing.T) {
		b := NewBackground()
		b.Run(func(ctx context.Context) error {
			<-ctx.Done()
			return ctx.Err()
		}, func(err error, d time.Duration) Verdict { return Verdict{Err: err} })
		b.Stop()
		select {
		case <-b.Done():
		default:
			t.Fatal("Stop returned before the verdict")
		}
		if v := b.Verdict(); !v.Done || !errors.Is(v.Err, context.Canceled) {
			t.Fatalf("verdict %+v, want Done with the check's context.Canceled", v)
		}
	})
	t.Run("checked", func(t *testing.T) {
		b := Checked()
		<-b.Done()
		if v := b.Verdict(); !v.Done || !v.AtOpen || v.Err != nil {
			t.Fatalf("verdict %+v, want Done at open", v)
		}
		b.Stop()
	})
}
