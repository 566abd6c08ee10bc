package bolt

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"testing"

	"k8s.io/client-go/tools/cache"

	"github.com/warmcache/warmcache/internal/podgen"
)

// The disk-full and read-only file system tests need a small file system
// they can fill and remount. The test binary re-executes itself in new user
// and mount namespaces (which an unprivileged user may create where the
// kernel allows it, and root always), mounts a tmpfs there and runs the
// scenario; the mount disappears with the child.

const (
	envFSDir = "WARMCACHE_BOLT_TEST_FSDIR"
	// exitNoMount tells the parent the child could not mount a tmpfs.
	exitNoMount = 3
)

func init() {
	childRoles["diskfull"] = childDiskFull
	childRoles["readonlyfs"] = childReadOnlyFS
}

// runNamespaced runs role in a child process in new user and mount
// namespaces; it skips the test when the system does not allow them.
func runNamespaced(t *testing.T, role string) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+role, envFSDir+"="+t.TempDir())
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getuid(), Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getgid(), Size: 1}},
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		t.Logf("child %s:\n%s", role, out.String())
	case errors.As(err, &exit) && exit.ExitCode() == exitNoMount:
		t.Skipf("cannot mount a tmpfs in a user namespace here: %s", out.String())
	case errors.As(err, &exit):
		t.Fatalf("child %s failed: %v\n%s", role, err, out.String())
	default:
		t.Skipf("cannot start a process in new user and mount namespaces here: %v", err)
	}
}

// mountTmpfs mounts a tmpfs of size bytes on the directory named by
// envFSDir, privately, and returns the directory. It exits with
// exitNoMount if that is not permitted.
func mountTmpfs(size int) string {
	dir := os.Getenv(envFSDir)
	if err := syscall.Mount("", "/", "", syscall.MS_REC|syscall.MS_PRIVATE, ""); err != nil {
		fmt.Printf("make / private: %v\n", err)
		os.Exit(exitNoMount)
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, fmt.Sprintf("size=%d", size)); err != nil {
		fmt.Printf("mount tmpfs: %v\n", err)
		os.Exit(exitNoMount)
	}
	return dir
}

// TestDiskFull checks that a commit failing with ENOSPC returns ErrDiskFull
// and leaves the previous content and RV intact, in the store and in the
// file, and that the store works again once space is freed.
func TestDiskFull(t *testing.T) { runNamespaced(t, "diskfull") }

func podTxns(from, to int, rv string) []cache.Transaction {
	var txns []cache.Transaction
	for i := from; i < to; i++ {
		p := podgen.Pod(i)
		p.ResourceVersion = rv
		txns = append(txns, cache.Transaction{Type: cache.TransactionTypeAdd, Object: p})
	}
	return txns
}

func childDiskFull() error {
	dir := mountTmpfs(4 << 20)
	ctx := context.Background()
	path := filepath.Join(dir, "cache.db")
	db, err := Open(ctx, path, Options{})
	if err != nil {
		return err
	}
	s, err := db.Resource(ctx, ResourceOptions{Identity: podsID, Codec: podCodec, Indexers: namespaceIndexers()})
	if err != nil {
		return err
	}
	if err := s.Apply(ctx, podTxns(0, 20, "1"), "1"); err != nil {
		return fmt.Errorf("first batch: %w", err)
	}
	// Fill the file system.
	filler := filepath.Join(dir, "filler")
	f, err := os.Create(filler)
	if err != nil {
		return err
	}
	chunk := make([]byte, 64<<10)
	for {
		if _, err := f.Write(chunk); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				return fmt.Errorf("fill: %w", err)
			}
			break
		}
	}
	_ = f.Close()
	// A batch larger than the free pages the file has needs new pages.
	err = s.Apply(ctx, podTxns(20, 400, "2"), "2")
	if !errors.Is(err, ErrDiskFull) || !errors.Is(err, syscall.ENOSPC) {
		return fmt.Errorf("Apply on a full disk = %v, want ErrDiskFull wrapping ENOSPC", err)
	}
	fmt.Printf("Apply on a full disk: %v\n", err)
	if err := expectPods(s, "1", 20); err != nil {
		return fmt.Errorf("after the failed commit: %w", err)
	}
	if _, err := s.BeginReplace(ctx); err != nil && !errors.Is(err, ErrDiskFull) {
		return fmt.Errorf("BeginReplace on a full disk = %v", err)
	}
	// Free space: writes work again.
	if err := os.Remove(filler); err != nil {
		return err
	}
	if err := s.Apply(ctx, podTxns(20, 40, "3"), "3"); err != nil {
		return fmt.Errorf("Apply after freeing space: %w", err)
	}
	if err := db.Close(); err != nil {
		return err
	}
	db, err = Open(ctx, path, Options{})
	if err != nil {
		return fmt.Errorf("reopen: %w", err)
	}
	defer func() { _ = db.Close() }()
	s, err = db.Resource(ctx, ResourceOptions{Identity: podsID, Codec: podCodec, Indexers: namespaceIndexers()})
	if err != nil {
		return err
	}
	if err := expectPods(s, "3", 40); err != nil {
		return fmt.Errorf("after reopen: %w", err)
	}
	return verifyErr(ctx, db)
}

// expectPods checks the RV and that podgen pods 0..n-1 are stored.
func expectPods(s *Store, rv string, n int) error {
	st, err := s.State()
	if err != nil {
		return err
	}
	if st.ResourceVersion != rv || st.Objects != n {
		return fmt.Errorf("state %+v, want RV %s and %d objects", st, rv, n)
	}
	var want []string
	for i := range n {
		p := podgen.Pod(i)
		want = append(want, p.Namespace+"/"+p.Name)
	}
	slices.Sort(want)
	if got := s.ListKeys(); !slices.Equal(got, want) {
		return fmt.Errorf("%d keys stored, want %d", len(got), len(want))
	}
	if len(s.List()) != n {
		return errors.New("List does not return every object")
	}
	return nil
}

// verifyErr runs Verify and returns its problems as an error.
func verifyErr(ctx context.Context, db *DB) error {
	var problems []error
	if err := verifyDB(ctx, db, nil, func(p Problem) { problems = append(problems, errors.New(p.String())) }); err != nil {
		return err
	}
	return errors.Join(problems...)
}

// TestReadOnlyFS checks that a file on a read-only file system opens
// read-write with ErrReadOnly, and read-only with its content intact.
func TestReadOnlyFS(t *testing.T) { runNamespaced(t, "readonlyfs") }

// writeTmpfsPods mounts a tmpfs of 8 MiB (mountTmpfs) and writes podgen
// pods [0, 10) at RV 5 into cache.db there, closed; it returns the
// directory and the file's path.
func writeTmpfsPods() (dir, path string, err error) {
	dir = mountTmpfs(8 << 20)
	ctx := context.Background()
	path = filepath.Join(dir, "cache.db")
	db, err := Open(ctx, path, Options{})
	if err != nil {
		return "", "", err
	}
	s, err := db.Resource(ctx, ResourceOptions{Identity: podsID, Codec: podCodec, Indexers: namespaceIndexers()})
	if err == nil {
		err = s.Apply(ctx, podTxns(0, 10, "5"), "5")
	}
	if err := errors.Join(err, db.Close()); err != nil {
		return "", "", err
	}
	return dir, path, nil
}

func childReadOnlyFS() error {
	dir, path, err := writeTmpfsPods()
	if err != nil {
		return err
	}
	ctx := context.Background()
	if err := syscall.Mount("", dir, "", syscall.MS_REMOUNT|syscall.MS_RDONLY, ""); err != nil {
		return fmt.Errorf("remount read-only: %w", err)
	}
	if _, err := Open(ctx, path, Options{}); !errors.Is(err, ErrReadOnly) || !errors.Is(err, syscall.EROFS) {
		return fmt.Errorf("read-write Open on a read-only file system = %v, want ErrReadOnly wrapping EROFS", err)
	}
	if _, err := Open(ctx, filepath.Join(dir, "new.db"), Options{}); !errors.Is(err, ErrReadOnly) {
		return fmt.Errorf("creating a file on a read-only file system = %v, want ErrReadOnly", err)
	}
	db, err := Open(ctx, path, Options{ReadOnly: true})
	if err != nil {
		return fmt.Errorf("read-only Open: %w", err)
	}
	defer func() { _ = db.Close() }()
	s, err := db.Resource(ctx, ResourceOptions{Identity: podsID, Codec: podCodec, Indexers: namespaceIndexers()})
	if err != nil {
		return err
	}
	return expectPods(s, "5", 10)
}
