package informer

import (
	"context"

	"github.com/warmcache/warmcache/reflector"
)

// lateTicket is a request for a pass of the list gate
// (Options.Reflector.ListGate) for a replay the loop owes: late handlers'
// (serveLate) or a caught-up warm start's (serveCaughtUp). The processing
// loop asks for one and goes on handling batches while it waits, so that
// the informer's events never wait behind other informers' relists (nor
// behind its own reflector's, which would wait for the loop to pop its
// pages), and replays once the pass is granted.
type lateTicket struct {
	done   chan struct{} // closed once Enter returned
	pass   *reflector.ListPass
	err    error
	cancel context.CancelFunc
}

// lateGate returns the pass to serve late handlers with (nil without a
// gate) and whether they may be served now. Without a pass granted yet it
// asks for one (once) and returns false; the grant interrupts the loop's
// Pop, as AddEventHandler does.
func (l *loop) lateGate(ctx context.Context) (*reflector.ListPass, bool) {
	g := l.i.opts.Reflector.ListGate
	if g == nil {
		return nil, true
	}
	t := l.ticket
	if t == nil {
		tctx, cancel := context.WithCancel(ctx)
		t = &lateTicket{done: make(chan struct{}), cancel: cancel}
		l.ticket = t
		go func() {
			t.pass, t.err = g.Enter(tctx, l.i.opts.Name)
			close(t.done)
			l.i.mu.Lock()
			if l.i.popCancel != nil {
				l.i.popCancel()
			}
			l.i.mu.Unlock()
		}()
		return nil, false
	}
	select {
	case <-t.done:
	default:
		return nil, false
	}
	l.ticket = nil
	t.cancel()
	if t.err != nil {
		return nil, false // ctx ended: the loop is stopping
	}
	return t.pass, true
}

// lateGranted reports whether no late handler waits for a pass: the loop's
// Pop may then be cut short to serve late handlers. l.i.mu must be held
// (the ticket's grant is read under it).
func (l *loop) lateGranted() bool {
	if l.ticket == nil {
		return true
	}
	select {
	case <-l.ticket.done:
		return true
	default:
		return false
	}
}

// dropTicket gives back a pass asked for and not used, when the loop
// stops.
func (l *loop) dropTicket() {
	t := l.ticket
	if t == nil {
		return
	}
	l.ticket = nil
	t.cancel()
	<-t.done
	t.pass.Leave()
}
