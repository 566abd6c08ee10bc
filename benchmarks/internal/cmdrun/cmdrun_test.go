package cmdrun

import (
	"bytes"
	"errors"
	"strings"
	"sync"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		name    string
		args    []string
		wrapped bool // an ErrUsage with a message, not the bare one
		wantErr bool
	}{
		{name: "flags", args: []string{"-n", "3"}},
		{name: "unknown flag", args: []string{"-x"}, wantErr: true},
		{name: "argument", args: []string{"-n", "3", "extra"}, wantErr: true, wrapped: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stderr bytes.Buffer
			fs := FlagSet("bench", &stderr)
			n := fs.Int("n", 1, "number")
			err := Parse(fs, tc.args)
			if !tc.wantErr {
				if err != nil || *n != 3 {
					t.Fatalf("Parse = %v, -n %d; want nil, 3", err, *n)
				}
				return
			}
			if !errors.Is(err, ErrUsage) {
				t.Fatalf("Parse = %v, want ErrUsage", err)
			}
			if (err != ErrUsage) != tc.wrapped {
				t.Errorf("Parse = %q: wrapped %t, want %t", err, err != ErrUsage, tc.wrapped)
			}
			if !tc.wrapped && !strings.Contains(stderr.String(), "-x") {
				t.Errorf("the flag set wrote %q, want the bad flag named", stderr.String())
			}
		})
	}
}

func TestLockedWriterKeepsWritesWhole(t *testing.T) {
	var buf bytes.Buffer
	w := LockedWriter(&buf)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				if _, err := w.Write([]byte("line\n")); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	if got := strings.Count(buf.String(), "line\n"); got != 800 {
		t.Errorf("%d whole lines, want 800", got)
	}
}
