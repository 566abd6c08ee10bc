package demo

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"go.uber.org/goleak"

	"github.com/warmcache/warmcache/internal/democtl"
)

// helperEnv makes the test binary act as a controller process: it prints
// the event lines of the mode the variable names and exits.
const helperEnv = "WARMCACHE_DEMO_HELPER"

func TestMain(m *testing.M) {
	switch os.Getenv(helperEnv) {
	case "":
		goleak.VerifyTestMain(m)
		return
	case "events":
		fmt.Println(`{"type":"add","key":"ns/a","rv":"1","initial":true}`)
		fmt.Println(`{"type":"synced"}`)
		// Stay until signalled, like the controller.
		select {}
	case "garbage":
		fmt.Println(`not json`)
		os.Exit(0)
	case "fail":
		os.Exit(3)
	}
}

func startHelper(t *testing.T, mode string) *Process {
	t.Helper()
	p, err := StartProcess(ProcessOptions{Command: os.Args[0], Env: []string{helperEnv + "=" + mode}, LogFile: filepath.Join(t.TempDir(), "log")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Kill)
	return p
}

func TestProcess(t *testing.T) {
	ctx := context.Background()
	t.Run("events are read as they come", func(t *testing.T) {
		p := startHelper(t, "events")
		err := p.WaitFor(ctx, func(es []democtl.Event) bool { return len(es) == 2 && es[1].Type == "synced" })
		if err != nil {
			t.Fatal(err)
		}
		if got := p.Events()[0]; got != (democtl.Event{Type: "add", Key: "ns/a", ResourceVersion: "1", Initial: true}) {
			t.Errorf("first event %+v", got)
		}
		// SIGTERM kills the helper (it does not handle it): an exit error.
		if err := p.Stop(); !errors.Is(err, ErrController) {
			t.Errorf("Stop = %v, want ErrController for a process killed by the signal", err)
		}
	})
	t.Run("a malformed line is an error", func(t *testing.T) {
		p := startHelper(t, "garbage")
		err := p.WaitFor(ctx, func([]democtl.Event) bool { return false })
		if !errors.Is(err, ErrExited) {
			t.Fatalf("WaitFor = %v, want ErrExited", err)
		}
		if err := p.Stop(); !errors.Is(err, ErrController) {
			t.Errorf("Stop = %v, want ErrController for the malformed line", err)
		}
	})
	t.Run("an exit code is an error", func(t *testing.T) {
		p := startHelper(t, "fail")
		if err := p.WaitFor(ctx, func([]democtl.Event) bool { return false }); !errors.Is(err, ErrExited) {
			t.Fatalf("WaitFor = %v, want ErrExited", err)
		}
	})
	t.Run("options", func(t *testing.T) {
		if _, err := StartProcess(ProcessOptions{}); !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("StartProcess without a command = %v, want ErrInvalidOptions", err)
		}
	})
}

func TestEventLogWaitForEndsWithContext(t *testing.T) {
	l := NewEventLog()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := l.WaitFor(ctx, func([]democtl.Event) bool { return false }); !errors.Is(err, context.Canceled) {
		t.Errorf("WaitFor = %v, want context.Canceled", err)
	}
	done := make(chan error, 1)
	go func() {
		done <- l.WaitFor(context.Background(), func(es []democtl.Event) bool { return len(es) == 1 })
	}()
	l.Add(democtl.Event{Type: "add", Key: "k"})
	if err := <-done; err != nil {
		t.Errorf("WaitFor = %v after the event came", err)
	}
}

func TestFold(t *testing.T) {
	start := map[string]string{"a": "1", "b": "2"}
	got := Fold(start, []democtl.Event{
		{Type: "update", Key: "a", ResourceVersion: "3"},
		{Type: "delete", Key: "b", ResourceVersion: "2"},
		{Type: "add", Key: "c", ResourceVersion: "4"},
		{Type: "synced"},
	})
	want := map[string]string{"a": "3", "c": "4"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("Fold = %v, want %v", got, want)
	}
	if start["a"] != "1" || len(start) != 2 {
		t.Errorf("Fold changed its input: %v", start)
	}
}

func TestConverged(t *testing.T) {
	want := map[string]string{"a": "3", "c": "4"}
	pred := Converged(want)
	var es []democtl.Event
	step := func(e democtl.Event, wantDone bool) {
		t.Helper()
		es = append(es, e)
		if got := pred(es); got != wantDone {
			t.Fatalf("after %+v: converged = %v, want %v", e, got, wantDone)
		}
	}
	step(democtl.Event{Type: "add", Key: "a", ResourceVersion: "1", Initial: true}, false)
	step(democtl.Event{Type: "add", Key: "b", ResourceVersion: "2", Initial: true}, false)
	step(democtl.Event{Type: "add", Key: "c", ResourceVersion: "4", Initial: true}, false)
	step(democtl.Event{Type: "update", Key: "a", ResourceVersion: "3"}, false) // b is extra
	step(democtl.Event{Type: "delete", Key: "b", ResourceVersion: "2"}, false) // not synced yet
	step(democtl.Event{Type: "synced"}, true)
	step(democtl.Event{Type: "update", Key: "c", ResourceVersion: "5"}, false)
	step(democtl.Event{Type: "update", Key: "c", ResourceVersion: "4"}, true)
	if !Converged(map[string]string{})([]democtl.Event{{Type: "synced"}}) {
		t.Error("an empty want did not converge on a synced line")
	}
}
