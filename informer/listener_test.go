package informer

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/utils/clock"
)

// A listener that is always a little behind keeps its buffer small and
// delivers in order.
func TestListenerBufferStaysBoundedUnderSteadyBacklog(t *testing.T) {
	l := newListener(klog.Background(), newRecorder(), "test", 0, 0, clock.RealClock{})
	added, got := 0, 0
	for round := 0; round < 10000; round++ {
		for i := 0; i < 3; i++ {
			l.add(note{kind: noteAdd, new: added})
			added++
		}
		for i := 0; i < 3; i++ {
			n, ok := l.next()
			if !ok {
				t.Fatal("listener stopped")
			}
			if n.new.(int) != got {
				t.Fatalf("delivered %v, want %d", n.new, got)
			}
			got++
			l.delivered()
		}
		if round == 0 {
			// Leave a steady backlog of 5.
			for i := 0; i < 5; i++ {
				l.add(note{kind: noteAdd, new: added})
				added++
			}
		}
	}
	if c := cap(l.buf); c > 64 {
		t.Fatalf("buffer grew to %d with a backlog of 5", c)
	}
	if p := l.pending.Load(); p != 5 {
		t.Fatalf("pending %d, want 5", p)
	}
	l.stop()
}

func TestListenerWaitBelow(t *testing.T) {
	l := newListener(klog.Background(), newRecorder(), "test", 0, 0, clock.RealClock{})
	for i := 0; i < 10; i++ {
		l.add(note{kind: noteAdd, new: i})
	}
	ctx, cancel := context.WithCancel(context.Background())
	waited := make(chan error, 1)
	go func() { waited <- l.waitBelow(ctx, 4) }()
	for i := 0; i < 5; i++ {
		select {
		case err := <-waited:
			t.Fatalf("waitBelow returned with %d pending: %v", l.pending.Load(), err)
		default:
		}
		if _, ok := l.next(); !ok {
			t.Fatal("stopped")
		}
		l.delivered()
	}
	// 5 pending: still waiting. One more delivery releases it.
	if _, ok := l.next(); !ok {
		t.Fatal("stopped")
	}
	l.delivered()
	if err := <-waited; err != nil {
		t.Fatalf("waitBelow: %v", err)
	}
	// A cancelled context and a stopped listener end the wait too.
	go func() { waited <- l.waitBelow(ctx, 0) }()
	cancel()
	if err := <-waited; !errors.Is(err, context.Canceled) {
		t.Fatalf("after cancel: %v", err)
	}
	go func() { waited <- l.waitBelow(context.Background(), 0) }()
	l.stop()
	if err := <-waited; err != nil {
		t.Fatalf("after stop: %v", err)
	}
}

// A replay that waits long for a handler logs it, with what the handler
// took meanwhile, once per period, until the handler catches up.
func TestListenerWaitBelowLogsASlowHandler(t *testing.T) {
	logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.BufferLogs(true)))
	buf := logger.GetSink().(ktesting.Underlier).GetBuffer()
	l := newListener(logger, newRecorder(), "slow-handler", 0, 0, clock.RealClock{})
	l.slowAfter = 10 * time.Millisecond
	for i := 0; i < 3; i++ {
		l.add(note{kind: noteAdd, new: i})
	}
	waited := make(chan error, 1)
	go func() { waited <- l.waitBelow(context.Background(), 0) }()
	warned := func(want string) {
		t.Helper()
		err := wait.PollUntilContextTimeout(context.Background(), time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
			return strings.Contains(buf.String(), want), nil
		})
		if err != nil {
			t.Fatalf("no log line with %s:\n%s", want, buf.String())
		}
	}
	const msg = "a replay is waiting for a slow handler"
	warned(msg)
	for _, want := range []string{`handler="slow-handler"`, `taken=0`, `pending=3`, `waitingFor=3`} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("the warning has no %s:\n%s", want, buf.String())
		}
	}
	if _, ok := l.next(); !ok {
		t.Fatal("stopped")
	}
	l.delivered()
	warned(`taken=1`)
	select {
	case err := <-waited:
		t.Fatalf("waitBelow returned with %d pending: %v", l.pending.Load(), err)
	default:
	}
	for i := 0; i < 2; i++ {
		if _, ok := l.next(); !ok {
			t.Fatal("stopped")
		}
		l.delivered()
	}
	if err := <-waited; err != nil {
		t.Fatalf("waitBelow: %v", err)
	}
	if n := strings.Count(buf.String(), msg); n < 2 {
		t.Errorf("%d warnings, want one per period waited (at least 2)", n)
	}
	l.stop()
}

// A replay paces itself with one waitBelow per notification, so a slow
// handler makes many short waits: they add up, and the replay that waits
// long in all is logged, with what the handler took meanwhile.
func TestListenerWaitBelowLogsAReplayHeldUpNoteByNote(t *testing.T) {
	logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.BufferLogs(true)))
	buf := logger.GetSink().(ktesting.Underlier).GetBuffer()
	l := newListener(logger, newRecorder(), "slow-handler", 0, 0, clock.RealClock{})
	l.slowAfter = 50 * time.Millisecond
	defer l.stop()
	// The handler takes one notification per tick, far less than
	// slowAfter each.
	handled := make(chan struct{})
	go func() {
		defer close(handled)
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		for range tick.C {
			if _, ok := l.next(); !ok {
				return
			}
			l.delivered()
		}
	}()
	const msg = "a replay is waiting for a slow handler"
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for i := 0; !strings.Contains(buf.String(), msg); i++ {
		if err := l.waitBelow(ctx, 1); err != nil {
			t.Fatalf("no log line with %s after %d notifications: %v\n%s", msg, i, err, buf.String())
		}
		l.add(note{kind: noteAdd, new: i})
	}
	if strings.Contains(buf.String(), "taken=0 ") {
		t.Errorf("the warning counts no notification taken:\n%s", buf.String())
	}
	l.stop()
	<-handled
}
