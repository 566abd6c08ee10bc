// Package cmdtest runs a benchmark program's run function with tiny flags
// and checks its exit code and output, so each program's main_test.go
// states only its cases.
package cmdtest

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"github.com/warmcache/warmcache/benchmarks/internal/cmdrun"
)

// Case is one invocation of a program's run function.
type Case struct {
	Name     string
	Args     []string
	Code     int      // the wanted exit code
	Stdout   []string // substrings stdout must contain
	StderrIn string   // a substring stderr must contain; "" matches any
}

// Run calls run once per case in a subtest and checks its exit code, that
// stdout holds every wanted substring, that stderr holds StderrIn, and
// that a run whose wanted code is not cmdrun.ExitOK wrote nothing to
// stdout.
func Run(t *testing.T, run func(args []string, stdout, stderr io.Writer) int, cases []Case) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.Name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := run(tc.Args, &stdout, &stderr); code != tc.Code {
				t.Fatalf("exit %d, want %d; stderr:\n%s", code, tc.Code, stderr.String())
			}
			for _, want := range tc.Stdout {
				if !strings.Contains(stdout.String(), want) {
					t.Errorf("stdout lacks %q:\n%s", want, stdout.String())
				}
			}
			if !strings.Contains(stderr.String(), tc.StderrIn) {
				t.Errorf("stderr lacks %q:\n%s", tc.StderrIn, stderr.String())
			}
			if tc.Code != cmdrun.ExitOK && stdout.Len() != 0 {
				t.Errorf("a failed run wrote to stdout:\n%s", stdout.String())
			}
		})
	}
}
