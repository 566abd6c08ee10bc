package bolt

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/warmcache/warmcache/store"
)

// fillPage returns page i of a fill test: n pods ns-<i%3>/p-<i>-<j>.
func fillPage(i, n int) []interface{} {
	out := make([]interface{}, n)
	for j := range out {
		out[j] = mkPod(fmt.Sprintf("ns-%d", i%3), fmt.Sprintf("p-%d-%03d", i, j), strconv.Itoa(100+i*n+j))
	}
	return out
}

// TestFillReopen checks what an open finds after a fill: the content and
// its resourceVersion once committed; after one left open or aborted (the
// process stopped before a Replace followed), an empty resource with no
// resourceVersion and RelistInterrupted, never the partial content; after
// an aborted fill and a committed Replace, that Replace's content. Verify
// passes on every file, the filled one included (invariant 4).
func TestFillReopen(t *testing.T) {
	ctx := context.Background()
	type state = struct {
		RV                    string
		Complete, Interrupted bool
		Discarded             string
		Objects               int
	}
	for _, tc := range []struct {
		name string
		end  func(t *testing.T, s *Store, f store.Fill)
		want state
	}{
		{"committed", func(t *testing.T, _ *Store, f store.Fill) { must(t, f.Commit(ctx, "50")) }, state{RV: "50", Complete: true, Objects: 20}},
		{"left open", func(*testing.T, *Store, store.Fill) {}, state{Interrupted: true}},
		{"aborted", func(t *testing.T, _ *Store, f store.Fill) { must(t, f.Abort()) }, state{Interrupted: true}},
		{"aborted then replaced", func(t *testing.T, s *Store, f store.Fill) {
			must(t, f.Abort())
			must(t, s.Replace(fillPage(0, 3), "60"))
		}, state{RV: "60", Complete: true, Objects: 3}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := tempPath(t)
			db, err := Open(ctx, path, Options{Sync: UnsafeNoSync})
			must(t, err)
			s := openPods(t, db, namespaceIndexers())
			s.Bookmark("7") // a resourceVersion recorded before the fill must not survive it
			f, err := s.BeginFill(ctx)
			must(t, err)
			for i := range 2 {
				must(t, f.Add(ctx, fillPage(i, 10)...))
			}
			if got := mustState(t, s); got.RV != "" || got.Complete || got.Objects != 20 {
				t.Errorf("State while filling = %+v, want 20 objects, incomplete, no resourceVersion", got)
			}
			verifyClean(t, db)
			tc.end(t, s, f)
			must(t, db.Close()) // closing with a fill open leaves it for the open to find

			db = openDB(t, path, Options{Sync: UnsafeNoSync})
			s = openPods(t, db, namespaceIndexers())
			if got := mustState(t, s); got != tc.want {
				t.Errorf("State after reopen = %+v, want %+v", got, tc.want)
			}
			if n := len(s.ListKeys()); n != tc.want.Objects {
				t.Errorf("%d keys after reopen, want %d", n, tc.want.Objects)
			}
			if n := generations(t, s); n != 1 {
				t.Errorf("%d generations after reopen, want 1", n)
			}
			verifyClean(t, db)
			// An emptied resource fills again.
			if tc.want.Objects == 0 {
				f, err := s.BeginFill(ctx)
				must(t, err)
				must(t, f.Add(ctx, fillPage(5, 4)...))
				must(t, f.Commit(ctx, "70"))
				if got := mustState(t, s); got.Objects != 4 || !got.Complete {
					t.Errorf("State after a second fill = %+v", got)
				}
			}
		})
	}
}

const envFillMode = "WARMCACHE_BOLT_FILL_MODE"

func init() { childRoles["fill"] = childFill }

// childFill fills the pods resource of the file at envCrashPath in pages of
// 200, printing "fill-page N" after each. In mode "abort" it aborts after
// three pages ("fill-abort"), in mode "commit" it commits at RV 1000
// ("fill-commit"); then it waits to be killed. In mode "page" it fills
// until it is killed.
func childFill() error {
	ctx := context.Background()
	_, s, err := crashOpen(ctx, os.Getenv(envCrashPath))
	if err != nil {
		return err
	}
	mode := os.Getenv(envFillMode)
	f, err := s.BeginFill(ctx)
	if err != nil {
		return err
	}
	for i := 0; mode == "page" || i < 3; i++ {
		if err := f.Add(ctx, fillPage(i, 200)...); err != nil {
			return err
		}
		fmt.Printf("fill-page %d\n", i)
	}
	switch mode {
	case "abort":
		if err := f.Abort(); err != nil {
			return err
		}
	case "commit":
		if err := f.Commit(ctx, "1000"); err != nil {
			return err
		}
	}
	fmt.Printf("fill-%s\n", mode)
	select {} // until killed
}

// TestFillCrash kills a filling child process with SIGKILL in the middle
// of a fill, after an aborted one and after a committed one, and checks
// invariant 2 on the file it leaves: only a committed fill's content and
// resourceVersion survive; otherwise the open finds an empty resource, no
// resourceVersion and an interrupted relist, and Verify passes.
func TestFillCrash(t *testing.T) {
	for _, tc := range []struct {
		mode, line string
		objects    int
	}{
		{"page", "fill-page 2", 0},
		{"abort", "fill-abort", 0},
		{"commit", "fill-commit", 600},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			ctx := context.Background()
			path := tempPath(t)
			exe, err := os.Executable()
			must(t, err)
			cmd := exec.Command(exe, "-test.run=^$")
			cmd.Env = append(os.Environ(), childEnv+"=fill", envCrashPath+"="+path, envFillMode+"="+tc.mode)
			cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
			var stderr strings.Builder
			cmd.Stderr = &stderr
			stdout, err := cmd.StdoutPipe()
			must(t, err)
			must(t, cmd.Start())
			sc := bufio.NewScanner(stdout)
			reached := false
			for !reached && sc.Scan() {
				reached = sc.Text() == tc.line
			}
			_ = cmd.Process.Signal(syscall.SIGKILL)
			for sc.Scan() { // drain until the pipe closes
			}
			err = cmd.Wait()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
				t.Fatalf("child did not die by SIGKILL: %v\n%s", err, stderr.String())
			}
			if !reached {
				t.Fatalf("child never printed %q\n%s", tc.line, stderr.String())
			}

			db, s, err := crashOpen(ctx, path)
			must(t, err)
			defer func() { _ = db.Close() }()
			st, err := s.State()
			must(t, err)
			want := store.State{RelistInterrupted: true}
			if tc.objects > 0 {
				want = store.State{ResourceVersion: "1000", Complete: true, Objects: tc.objects}
			}
			if st != want {
				t.Errorf("State after a kill at %q = %+v, want %+v", tc.line, st, want)
			}
			if n := len(s.ListKeys()); n != tc.objects {
				t.Errorf("%d keys after a kill at %q, want %d", n, tc.line, tc.objects)
			}
			if err := verifyErr(ctx, db); err != nil {
				t.Errorf("Verify after kill: %v", err)
			}
			if n := generations(t, s); n != 1 {
				t.Errorf("%d generations after reopen, want 1", n)
			}
		})
	}
}
