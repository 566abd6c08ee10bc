package eventlog

import (
	"bytes"
	"errors"
	"testing"

	"github.com/go-logr/logr"
	"go.uber.org/goleak"
	"k8s.io/client-go/tools/cache"

	"github.com/warmcache/warmcache/internal/testkit"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type event struct {
	Type string `json:"type"`
	Key  string `json:"key,omitempty"`
}

func TestWriteLines(t *testing.T) {
	var buf bytes.Buffer
	l := New[event](logr.Discard(), &buf)
	l.Write(event{Type: "add", Key: "ns/a"})
	l.Write(event{Type: "synced"})
	want := `{"type":"add","key":"ns/a"}` + "\n" + `{"type":"synced"}` + "\n"
	if buf.String() != want {
		t.Errorf("wrote %q, want %q", buf.String(), want)
	}
}

func TestNilWriterWritesNothing(t *testing.T) {
	New[event](logr.Discard(), nil).Write(event{Type: "add"})
}

type failingWriter struct{ n int }

func (w *failingWriter) Write([]byte) (int, error) {
	w.n++
	return 0, errors.New("broken pipe")
}

func TestDisablesItselfOnError(t *testing.T) {
	w := &failingWriter{}
	l := New[event](logr.Discard(), w)
	l.Write(event{Type: "synced"})
	l.Write(event{Type: "synced"})
	if w.n != 1 {
		t.Errorf("%d writes after a failure, want the log disabled after the first", w.n)
	}
}

func TestResourceVersion(t *testing.T) {
	pod := testkit.Pod("a", "7")
	for _, tc := range []struct {
		name string
		obj  interface{}
		want string
	}{
		{"object", pod, "7"},
		{"final state unknown", cache.DeletedFinalStateUnknown{Key: "a", Obj: pod}, "7"},
		{"no metadata", "a string", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ResourceVersion(tc.obj); got != tc.want {
				t.Errorf("ResourceVersion = %q, want %q", got, tc.want)
			}
		})
	}
}
