package bolt

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/warmcache/warmcache/store/bolt/internal/syncstate"
)

// A background flush that fails marks the file unflushed for good: Close
// does not record it closed even though its own flush succeeds (the kernel
// reports a lost write once), and the next Open, in the same boot, refuses
// it.
func TestFailedBackgroundFlushIsNeverForgotten(t *testing.T) {
	withBoot(t, "boot-1")
	prev := flushFile
	t.Cleanup(func() { flushFile = prev })
	var calls atomic.Int32
	failed := make(chan struct{})
	flushFile = func(b *bbolt.DB) error {
		if calls.Add(1) == 1 {
			close(failed)
			return syscall.EIO
		}
		return b.Sync()
	}
	path := tempPath(t)
	db := writeOne(t, path, Options{FlushInterval: time.Millisecond})
	<-failed
	err := db.Close()
	if err == nil || !strings.Contains(err.Error(), "earlier flush failed") {
		t.Fatalf("Close after a failed background flush = %v, want an error saying so", err)
	}
	if st := mustSyncState(t, path); st.State != syncstate.Unflushed {
		t.Fatalf("state = %+v, want unflushed", st)
	}
	if _, err := Open(context.Background(), path, Options{ReadOnly: true}); !errors.Is(err, ErrUnflushed) {
		t.Fatalf("Open in the same boot = %v, want ErrUnflushed", err)
	}
}

// The background flush runs only under SyncOnClose and stops with Close
// (goleak in TestMain checks that no goroutine outlives the tests).
func TestBackgroundFlushOnlyUnderSyncOnClose(t *testing.T) {
	withBoot(t, "boot-1")
	for _, tc := range []struct {
		opts Options
		want bool
	}{
		{Options{}, true},
		{Options{FlushInterval: -1}, false},
		{Options{Sync: SyncNoFreelist}, false},
		{Options{Sync: UnsafeNoSync}, false},
	} {
		path := tempPath(t)
		db := writeOne(t, path, tc.opts)
		if got := db.flusher != nil; got != tc.want {
			t.Errorf("%+v: background flush %v, want %v", tc.opts, got, tc.want)
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
