package cli

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

// TestDiagSinkPrintsAWarningOnce checks that the store's log of the same
// unreadable object, met by several reads of one command, is printed once
// and counted each time, while a different one is printed too.
func TestDiagSinkPrintsAWarningOnce(t *testing.T) {
	var out bytes.Buffer
	logger, st := newDiagLogger(&out)
	bad := errors.New("decode default/p1: unexpected EOF")
	msg := "Skipping an object that cannot be decoded; the resource is marked incomplete"
	for range 3 {
		logger.WithValues("resource", "pods").Error(bad, msg, "key", "default/p1")
	}
	logger.Error(bad, msg, "key", "default/p2")
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	want := []string{
		`warning: cannot read an object: decode default/p1: unexpected EOF key="default/p1"`,
		`warning: cannot read an object: decode default/p1: unexpected EOF key="default/p2"`,
	}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Fatalf("printed:\n%s\nwant:\n%s", out.String(), strings.Join(want, "\n"))
	}
	if got := st.Errors(); got != 4 {
		t.Fatalf("errors counted: %d, want 4 (each one logged)", got)
	}
}
