package informer

import (
	"context"
	"errors"
	"fmt"
	"runtime"

	"github.com/warmcache/warmcache/reflector"
	"github.com/warmcache/warmcache/store"
)

// ParallelScanner is an optional ability of a store: Scan with objects
// decoded by up to n goroutines. fn is still called on one goroutine, in
// key order. The informer uses it for replays (Options.ReplayParallelism).
type ParallelScanner interface {
	ScanParallel(ctx context.Context, n int, fn store.ScanFunc) error
}

// FileChecker is an optional ability of a store whose file is checked in
// the background after it opened (store/bolt): WaitFileChecked returns
// once the check has a verdict, nil for a sound file, an error wrapping
// store.ErrCorrupt for a damaged one, or ctx's error. A replay to
// handlers waits for it first, until a sound verdict or a relist, so that
// no object of a damaged file reaches a handler (invariant 5); a store
// without it is checked when it opens.
type FileChecker interface {
	WaitFileChecked(ctx context.Context) error
}

// warmStart prepares the warm start of a complete store. By default the
// stored objects are withheld from the handlers (l.partial empty,
// l.withheld set) while the resumed watch brings the store up to the
// server's state; once the reflector's MarkSynced marker is popped (see
// caughtUp), the caught-up store is replayed to them as the initial list,
// as a cold start's relist would have told them. With
// Options.WarmStartChanges it replays the stored objects at once, and the
// changes follow as live events. If the store fails midway (corrupt
// data), the informer relists; the keys after the last one replayed are
// then notified as adds by the relist (see relistPage), and the informer
// is not synced before that relist commits. An incomplete store is not
// replayed, nor one found ahead of the server's or relisted before it was
// checked against the server: the relist notifies all of its objects as
// adds.
func (l *loop) warmStart(ctx context.Context) error {
	st, err := l.st.State()
	if err != nil || !st.Complete {
		if err != nil || st.Objects > 0 {
			// The store holds objects the handlers were never told about
			// (an interrupted relist, data marked incomplete): the relist
			// that follows must tell them everything, as adds.
			none := ""
			l.partial = &none
		}
		return nil
	}
	// Hold the replay until the reflector has checked the stored
	// resourceVersion against the server's: a file ahead of the server
	// (a recreated cluster, an etcd restored from an older backup) is not
	// the server's state, and handlers must never be told it.
	how, err := l.i.resume.wait(ctx)
	if err != nil {
		return err
	}
	switch how {
	case startAhead:
		l.logger.Info("Warm start: not replaying the stored objects, whose resourceVersion is ahead of the server's; the relist tells the handlers the server's state as adds",
			"objects", st.Objects, "resourceVersion", st.ResourceVersion)
	case startRelisted:
		l.logger.Info("Warm start: not replaying the stored objects, which were not checked against the server before a relist was forced; the relist tells the handlers the server's state as adds",
			"objects", st.Objects, "resourceVersion", st.ResourceVersion)
	}
	if how != startResumed || !l.i.opts.WarmStartChanges {
		none := ""
		l.partial = &none
		l.withheld = how == startResumed
		if l.withheld {
			l.logger.V(2).Info("Warm start: catching up with the server; the handlers get the caught-up store as the initial list",
				"objects", st.Objects, "resourceVersion", st.ResourceVersion)
		}
		return nil
	}
	ls := l.i.proc.active()
	l.logger.V(2).Info("Warm start: replaying the stored objects, then the changes since", "objects", st.Objects,
		"resourceVersion", st.ResourceVersion, "handlers", len(ls))
	if len(ls) == 0 {
		return nil
	}
	last, err := l.replayGated(ctx, ls, "warm-start")
	if err != nil && ctx.Err() == nil {
		l.partial = &last
		l.i.ReportCorruption(fmt.Errorf("warm start replay stopped after key %q: %w", last, err))
		return nil
	}
	return err
}

// caughtUp handles the reflector's MarkSynced marker: every change the
// server had made before the informer started is in the store. A warm
// start that withheld the stored objects (l.withheld) now owes the
// handlers the store as the initial list (l.replayDue, served by
// serveCaughtUp); the loop marks the informer synced once it is told.
func (l *loop) caughtUp(ctx context.Context) error {
	l.logger.V(2).Info("Warm start caught up with the server")
	if !l.withheld {
		if l.partial != nil && *l.partial == "" {
			// The store became incomplete after the reflector decided
			// to resume (a read found corrupt data): the handlers were
			// told nothing and only a relist can tell them.
			l.i.ReportCorruption(errors.New("the store was found incomplete while the warm start resumed; relisting"))
		}
		return nil
	}
	l.replayDue = true
	// Until the replay, adders of handlers never wait for the loop, as
	// before the warm start's replay (AddEventHandler).
	l.i.setLoopState(false)
	return l.serveCaughtUp(ctx)
}

// caughtUpDone records that the caught-up replay is no longer owed: the
// loop serves late handlers again.
func (l *loop) caughtUpDone() {
	l.replayDue = false
	l.i.setLoopState(true)
}

// serveCaughtUp replays the caught-up store to the handlers as the initial
// list, once the list gate (Options.Reflector.ListGate), if any, grants a
// pass. The pass is asked for without blocking the loop (lategate.go),
// which goes on applying the watch's changes to the store meanwhile and
// tells the handlers none of them: the replay tells them the store as it
// is then, and the informer is not synced before. A loop waiting at the
// gate would hold up its own reflector's relist, which needs the loop to
// pop its pages, until the gate's Patience. While a relist is open or
// asked for (corrupt data), the replay waits: a relist that commits tells
// the handlers the server's state itself, and the replay is dropped. Late
// handlers are not served separately: those activated by then (serveLate)
// get the replay with the others.
func (l *loop) serveCaughtUp(ctx context.Context) error {
	if !l.replayDue {
		return nil
	}
	if !l.withheld || l.partial == nil || *l.partial != "" {
		l.withheld = false // a relist tells the handlers
		l.caughtUpDone()
		return nil
	}
	ls := l.i.proc.active()
	if len(ls) == 0 {
		l.withheld, l.partial = false, nil
		l.caughtUpDone()
		l.markIfSynced()
		return nil
	}
	l.i.mu.Lock()
	ready := l.caughtUpReadyLocked()
	l.i.mu.Unlock()
	if !ready {
		// A relist is open, or asked for after corrupt data: if it
		// commits it tells the handlers the server's state; if it
		// aborts, the replay follows. A pass held meanwhile would keep
		// the relist's from the gate.
		l.dropTicket()
		return nil
	}
	pass, ok := l.lateGate(ctx)
	if !ok {
		return nil // asked for; the grant interrupts the loop's Pop
	}
	defer pass.Leave()
	defer l.caughtUpDone()
	l.withheld = false
	ls = l.i.proc.active() // handlers activated while the pass was asked for
	last, err := l.replay(ctx, ls, "warm-start", nil, pass)
	switch {
	case err == nil:
		l.partial = nil
		l.markIfSynced()
	case ctx.Err() != nil:
		return err
	default:
		l.partial = &last
		l.i.ReportCorruption(fmt.Errorf("warm start replay stopped after key %q: %w", last, err))
	}
	return nil
}

// caughtUpReadyLocked reports whether the caught-up replay is owed and
// may run: no relist is open or asked for. l.i.mu must be held.
func (l *loop) caughtUpReadyLocked() bool {
	return l.replayDue && l.rep == nil && !l.i.relistRequested
}

// serveLate replays the store to the handlers added since the last call,
// one at a time: each is activated (it gets live changes from now on) and
// then gets the store's content as initial-list adds. The processing loop
// is the only writer, so nothing changes in between.
//
// A late handler is told what the other handlers were told, as client-go
// tells one the content of its indexer: while l.partial is set (a warm
// start not replayed because the file is ahead of the server, unchecked
// or incomplete, or stopped midway by corrupt data), the store holds objects
// the handlers were never told, and the relist that follows tells them
// the server's state. Such a handler is replayed the keys up to
// *l.partial only (none when it is empty); the relist then tells it the
// rest with the others.
//
// It serves at most the handlers waiting when it is called, and returns
// after a replay when a batch is queued: the loop handles that batch
// before the next replay (see pop), so that the watch waits for one
// replay at most.
func (l *loop) serveLate(ctx context.Context) error {
	l.i.mu.Lock()
	round := len(l.i.late)
	l.i.mu.Unlock()
	if round == 0 {
		if !l.replayDue {
			l.dropTicket() // the handlers it was asked for were removed
		}
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	// The round's replays hold one pass of the list gate, if any, asked
	// for without blocking the loop (lategate.go).
	pass, ok := l.lateGate(ctx)
	if !ok {
		return nil
	}
	defer pass.Leave()
	for ; round > 0; round-- {
		// Handlers added and removed in a loop keep the list from
		// emptying: check for the end at each one.
		if err := ctx.Err(); err != nil {
			return err
		}
		l.i.mu.Lock()
		if len(l.i.late) == 0 {
			l.i.mu.Unlock()
			return nil
		}
		h := l.i.late[0]
		l.i.late[0] = nil
		l.i.late = l.i.late[1:]
		if len(l.i.late) == 0 {
			l.i.late = nil // let the array go
		}
		l.i.wakeLateLocked()
		l.i.mu.Unlock()
		if !l.i.proc.activate(h) {
			continue // removed meanwhile
		}
		l.servedLate = true
		last, err := l.replay(ctx, []*listener{h}, "handler", l.partial, pass)
		h.tracker.Finished() // the guard taken by AddEventHandler
		if err != nil {
			if ctx.Err() != nil {
				return err
			}
			// The handler keeps the adds it got and the changes from now
			// on; the relist re-establishes the store.
			l.logger.Error(err, "Replay to a new handler stopped midway; the handler misses the objects after the last key replayed", "handler", h.name, "lastKey", last)
			l.i.ReportCorruption(err)
		}
		if l.q.Ready() {
			// A batch is queued: the loop handles it before the next
			// late handler's replay (see pop), so that handlers added
			// without end never hold up the watch for more than one
			// replay.
			return nil
		}
	}
	return nil
}

// errHandlersRemoved ends a replay whose handlers were all removed;
// errReplayedThrough one that reached the last key it was to replay.
var (
	errHandlersRemoved = errors.New("every handler of the replay was removed")
	errReplayedThrough = errors.New("replayed through the last key")
)

// allStopped reports whether every listener of ls has stopped (was
// removed).
func allStopped(ls []*listener) bool {
	for _, h := range ls {
		if !h.isStopped() {
			return false
		}
	}
	return true
}

// replayProgressEvery is how often a replay tells its gate pass it moved.
const replayProgressEvery = 256

// replayGated replays the whole store to ls holding a pass of the list
// gate (Options.Reflector.ListGate), if any: a replay holds decoded
// objects in flight as a relist does. It waits for the pass on the loop:
// the warm start's replay is the informer's initial list.
func (l *loop) replayGated(ctx context.Context, ls []*listener, kind string) (string, error) {
	pass, err := l.i.opts.Reflector.ListGate.Enter(ctx, l.i.opts.Name)
	if err != nil {
		return "", fmt.Errorf("%s replay: %w", kind, err)
	}
	defer pass.Leave()
	return l.replay(ctx, ls, kind, nil, pass)
}

// replay streams the store to ls as initial-list adds, waiting whenever a
// handler has more than ReplayPending notifications pending, and tells
// pass (nil: none) of its progress. With through set, it replays the keys
// up to *through only, none when it is empty. It returns the last key
// replayed.
func (l *loop) replay(ctx context.Context, ls []*listener, kind string, through *string, pass *reflector.ListPass) (string, error) {
	if through != nil && *through == "" {
		return "", nil
	}
	if err := l.waitChecked(ctx); err != nil {
		return "", fmt.Errorf("%s replay: waiting for the file check: %w", kind, err)
	}
	start := l.i.opts.Clock.Now()
	bound := int64(l.i.opts.ReplayPending)
	n := 0
	// A replay decodes the store as a relist does: a burst.
	l.i.releaser.Begin()
	defer func() { l.i.endBurst(n) }()
	var last string
	err := l.scan(ctx, func(key string, obj interface{}) error {
		if through != nil && key > *through {
			return errReplayedThrough
		}
		if allStopped(ls) {
			return errHandlersRemoved
		}
		if err := l.pace(ctx, ls, bound); err != nil {
			return err
		}
		if n%replayProgressEvery == 0 {
			pass.Progress()
		}
		l.i.detector.watch(obj)
		nt := note{kind: noteAdd, new: obj, initial: true}
		for _, h := range ls {
			h.add(nt)
		}
		n++
		last = key
		return nil
	})
	if errors.Is(err, errHandlersRemoved) {
		l.logger.V(4).Info("Replay stopped: its handlers were removed", "kind", kind, "objects", n)
		return last, nil
	}
	if err != nil && !errors.Is(err, errReplayedThrough) {
		return last, err
	}
	l.i.opts.Metrics.Replayed(kind, l.since(start), n)
	l.logger.V(2).Info("Replayed the store to handlers", "kind", kind, "objects", n, "handlers", len(ls), "took", l.since(start))
	return last, nil
}

// waitChecked waits for the verdict of the store's file check
// (FileChecker), unless the content is already known not to come from a
// damaged file (l.checked): a verdict the file was damaged stays for the
// life of the file, and must not keep a late handler from the content a
// relist has since written.
func (l *loop) waitChecked(ctx context.Context) error {
	fc, ok := l.st.(FileChecker)
	if l.checked || !ok {
		return nil
	}
	l.setWaiting(true)
	err := fc.WaitFileChecked(ctx)
	l.setWaiting(false)
	if err != nil {
		return err
	}
	l.checked = true
	return nil
}

// scan streams the store to fn on the calling goroutine. With a
// ParallelScanner it decodes on ReplayParallelism goroutines; otherwise
// the store's Scan runs on a second goroutine, so that decoding the next
// chunk overlaps with fn's work on the previous one.
func (l *loop) scan(ctx context.Context, fn store.ScanFunc) error {
	if ps, ok := l.st.(ParallelScanner); ok {
		n := l.i.opts.ReplayParallelism
		if n == 0 {
			n = runtime.GOMAXPROCS(0)
		}
		return ps.ScanParallel(ctx, n, fn)
	}
	type item struct {
		key string
		obj interface{}
	}
	const chunk = 128
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ch := make(chan []item, 4)
	errc := make(chan error, 1)
	go func() {
		defer close(ch)
		buf := make([]item, 0, chunk)
		send := func() error {
			select {
			case ch <- buf:
				buf = make([]item, 0, chunk)
				return nil
			case <-sctx.Done():
				return sctx.Err()
			}
		}
		err := l.st.Scan(sctx, func(key string, obj interface{}) error {
			buf = append(buf, item{key, obj})
			if len(buf) == chunk {
				return send()
			}
			return nil
		})
		if err == nil && len(buf) > 0 {
			err = send()
		}
		errc <- err
	}()
	var ferr error
	for items := range ch {
		for _, it := range items {
			if ferr != nil {
				break // drain until the scan notices the cancellation
			}
			if ferr = fn(it.key, it.obj); ferr != nil {
				cancel()
			}
		}
	}
	serr := <-errc
	if ferr != nil {
		return ferr
	}
	return serr
}
