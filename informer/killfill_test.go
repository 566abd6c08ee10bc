package informer

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"

	"github.com/warmcache/warmcache/internal/fakesource"
	"github.com/warmcache/warmcache/internal/testkit"
	"github.com/warmcache/warmcache/store/bolt/inspect"
)

// TestKillDuringColdStartFill kills an informer in a child process with
// SIGKILL in the middle of its cold start's list, which it writes into the
// empty file page by page: its handler blocks after it was told 700 of
// the 5,000 pods, and pacing holds the list there. The file must then
// hold no partial content and no resourceVersion (the open reports an
// interrupted relist, invariant 2), and a second child must list again,
// tell its handler every pod exactly once and end equal to the source,
// with a consistent file.
func TestKillDuringColdStartFill(t *testing.T) {
	if testing.Short() {
		t.Skip("kill test skipped in -short mode")
	}
	src, err := fakesource.New(fakesource.Options{BookmarkInterval: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	const pods, blockAt = 5000, 700
	for i := range pods {
		if _, err := src.Add(testkit.Pod(fmt.Sprintf("p%05d", i), "")); err != nil {
			t.Fatal(err)
		}
	}
	srv := serveSource(t, src)
	dir := t.TempDir()
	dbPath := filepath.Join(dir, "kill.db")
	logPath := filepath.Join(dir, "violations.log")

	cmd := childCmd(srv.URL, dbPath, logPath, "")
	cmd.Env = append(cmd.Env, envKillBlockAt+"="+strconv.Itoa(blockAt))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	err = wait.PollUntilContextTimeout(context.Background(), 5*time.Millisecond, 60*time.Second, true, func(context.Context) (bool, error) {
		select {
		case err := <-exited:
			return false, fmt.Errorf("child exited before its handler blocked: %v\n%s", err, cmd.Stderr)
		default:
		}
		_, err := os.Stat(logPath + ".blocked")
		return err == nil, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	<-exited
	if countLines(logPath+".synced") != 0 {
		t.Fatal("the child synced before it was killed: the kill did not land in its list")
	}

	// What the killed child left: nothing to serve or resume from.
	ctx := context.Background()
	db, st, err := openKillFile(ctx, dbPath, klog.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	s, err := st.State()
	if err != nil {
		t.Fatal(err)
	}
	if !s.RelistInterrupted || s.Complete || s.ResourceVersion != "" || s.Objects != 0 {
		t.Errorf("State after a kill in the cold start's list = %+v, want an interrupted relist, empty, no resourceVersion", s)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	target := src.ResourceVersion()
	final := childCmd(srv.URL, dbPath, logPath, target)
	out, err := final.Output()
	if err != nil {
		t.Fatalf("final child: %v\n%s", err, final.Stderr)
	}
	if !bytes.Contains(out, []byte("caught up")) {
		t.Fatalf("final child did not report catching up: %s", out)
	}
	if v, err := os.ReadFile(logPath); err == nil && len(v) > 0 {
		t.Fatalf("handler protocol violations:\n%s", v)
	}
	db, st, err = openKillFile(ctx, dbPath, klog.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	sameAsSource(t, st, src)
	var problems []inspect.Problem
	if err := inspect.Verify(ctx, db, nil, func(p inspect.Problem) { problems = append(problems, p) }); err != nil {
		t.Fatal(err)
	}
	if len(problems) > 0 {
		t.Fatalf("%d problems in the file, first: %v", len(problems), problems[0])
	}
}
