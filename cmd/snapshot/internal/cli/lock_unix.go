//go:build unix

package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"

	"github.com/warmcache/warmcache/store/bolt"
)

// lockPoll is the interval between two attempts to take the lock.
const lockPoll = 10 * time.Millisecond

// lockShared takes a shared flock on f, the lock bbolt takes for a
// read-only open, waiting at most timeout. A process that has the file open
// for writing holds an exclusive lock: the wait then ends with an error
// wrapping bolt.ErrLocked. Holding the shared lock for the whole command
// keeps writers away while the file is validated and read.
func lockShared(ctx context.Context, f *os.File, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB)
		switch {
		case err == nil:
			return nil
		case !errors.Is(err, syscall.EWOULDBLOCK):
			return fmt.Errorf("lock %s: %w", f.Name(), err)
		case !time.Now().Before(deadline):
			return fmt.Errorf("lock %s: waited %v: %w", f.Name(), timeout, bolt.ErrLocked)
		}
		t := time.NewTimer(min(lockPoll, time.Until(deadline)))
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("lock %s: %w", f.Name(), ctx.Err())
		case <-t.C:
		}
	}
}
