package informer

import (
	"context"
	"fmt"
	"testing"

	"github.com/warmcache/warmcache/store"
)

// gatedCheck is a store whose file check (FileChecker) has its verdict
// given by the test: entered is closed when the informer first waits for
// it, and the verdict is what the test sends on verdict.
type gatedCheck struct {
	store.Store
	entered chan struct{}
	verdict chan error
	got     error
	done    chan struct{}
}

func newGatedCheck(st store.Store) *gatedCheck {
	return &gatedCheck{Store: st, entered: make(chan struct{}), verdict: make(chan error, 1), done: make(chan struct{})}
}

func (g *gatedCheck) WaitFileChecked(ctx context.Context) error {
	select {
	case <-g.entered:
	default:
		close(g.entered)
		select {
		case g.got = <-g.verdict:
			close(g.done)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	select {
	case <-g.done:
		return g.got
	case <-ctx.Done():
		return ctx.Err()
	}
}

// TestReplayWaitsForTheFileCheck: a store whose file is checked in the
// background (bolt) is replayed to handlers only once the check has a
// verdict. A sound file is then replayed; a damaged one never is: the
// informer relists, and the handler is told the server's objects once, as
// initial adds by the relist (a replay as well would tell them twice).
func TestReplayWaitsForTheFileCheck(t *testing.T) {
	for _, tc := range []struct {
		name    string
		verdict error
	}{
		{"sound", nil},
		{"damaged", fmt.Errorf("page 9: unknown page type: %w", store.ErrCorrupt)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := newSource(t, "a", "b", "c")
			path, c := writeFile(t, src)
			st, closeStore := openBolt(t, path, c, nil)
			defer closeStore()
			g := newGatedCheck(st)
			rec := newRecorder()
			r := runInformer(t, src.Endpoint(podGVK, ""), Options{Store: g}, rec)
			defer r.stop() // before the store closes
			awaitClosed(t, "the warm start's wait for the file check", g.entered)
			// The replay is held before its first object.
			if got := rec.Snapshot(); len(got) != 0 {
				t.Fatalf("handler told %v before the file check's verdict", got)
			}
			g.verdict <- tc.verdict
			r.waitHandlersSynced(t)
			var want []event
			for _, n := range []string{"a", "b", "c"} {
				want = append(want, event("add ns/"+n+"@"+getPod(t, src, n).ResourceVersion+" initial=true"))
			}
			equalEvents(t, sortedEvents(rec.Snapshot()), want)

			// A handler added after the sync is replayed what the
			// others were told, whatever the verdict: a damaged file's
			// store now holds the relist's objects, which come from the
			// server, and a late handler must neither miss them nor
			// force another relist.
			late := newRecorder()
			reg, err := r.inf.AddEventHandler(late)
			if err != nil {
				t.Fatal(err)
			}
			waitDone(t, "the late handler's sync", reg.HasSyncedChecker())
			equalEvents(t, sortedEvents(late.WaitFor(t, len(want))), want)
		})
	}
}
