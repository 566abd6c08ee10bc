package soak

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	bbolt "go.etcd.io/bbolt"
	"golang.org/x/sys/unix"
)

// boltFile writes a bbolt file with nested buckets over several pages.
func boltFile(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "f.db")
	db, err := bbolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bbolt.Tx) error {
		for b := range 3 {
			bk, err := tx.CreateBucket([]byte(fmt.Sprint("bucket-", b)))
			if err != nil {
				return err
			}
			for i := range 500 {
				if err := bk.Put([]byte(fmt.Sprintf("key-%05d", i)), bytes.Repeat([]byte{byte(i)}, 100)); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	return path
}

func TestDamagePage(t *testing.T) {
	for seed := range uint64(6) {
		path := boltFile(t)
		before, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		d, err := damagePage(path, t.TempDir(), rand.New(rand.NewPCG(seed, 0)))
		if err != nil {
			t.Fatal(err)
		}
		after, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if len(after) != len(before) || d.PageSize == 0 || d.Page < 2 {
			t.Fatalf("damage %+v: file of %d bytes, was %d", d, len(after), len(before))
		}
		// Only that page changed, its header only if said so.
		start, end := d.Page*d.PageSize, (d.Page+1)*d.PageSize
		if !bytes.Equal(before[:start], after[:start]) || !bytes.Equal(before[end:], after[end:]) {
			t.Errorf("damage %v: bytes outside the page changed", d)
		}
		if headerSame := bytes.Equal(before[start:start+16], after[start:start+16]); headerSame == d.Header {
			t.Errorf("damage %v: header unchanged %v", d, headerSame)
		}
		if bytes.Equal(before[start+16:end], after[start+16:end]) {
			t.Errorf("damage %v: the page's content is unchanged", d)
		}
		// The page held part of the tree before.
		orig := filepath.Join(t.TempDir(), "orig.db")
		if err := os.WriteFile(orig, before, 0o600); err != nil {
			t.Fatal(err)
		}
		db, err := bbolt.Open(orig, 0o600, &bbolt.Options{ReadOnly: true, PreLoadFreelist: true})
		if err != nil {
			t.Fatal(err)
		}
		err = db.View(func(tx *bbolt.Tx) error {
			info, err := tx.Page(d.Page)
			if err == nil && (info == nil || info.Type != d.Type || (d.Type != "branch" && d.Type != "leaf")) {
				err = fmt.Errorf("page %d was %+v", d.Page, info)
			}
			return err
		})
		db.Close()
		if err != nil {
			t.Errorf("damage %v: %v", d, err)
		}
		t.Logf("seed %d: %v", seed, d)
	}
}

func TestDiskRlimit(t *testing.T) {
	sleep := exec.Command("sleep", "60")
	if err := sleep.Start(); err != nil {
		t.Skipf("no sleep command: %v", err)
	}
	defer func() { _ = sleep.Process.Kill(); _ = sleep.Wait() }()
	file := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(file, make([]byte, 12345), 0o600); err != nil {
		t.Fatal(err)
	}
	d := &disk{mode: DiskRlimit}
	if _, err := d.fill(sleep.Process.Pid, file); err != nil {
		t.Fatal(err)
	}
	var lim unix.Rlimit
	if err := unix.Prlimit(sleep.Process.Pid, unix.RLIMIT_FSIZE, nil, &lim); err != nil || lim.Cur != 12345 {
		t.Errorf("while full: limit %+v (%v), want 12345", lim, err)
	}
	if err := d.free(); err != nil {
		t.Fatal(err)
	}
	if err := unix.Prlimit(sleep.Process.Pid, unix.RLIMIT_FSIZE, nil, &lim); err != nil || lim.Cur != unix.RLIM_INFINITY {
		t.Errorf("freed: limit %+v (%v), want none", lim, err)
	}
}

// TestDiskTmpfs fills and frees a tmpfs, in a child process in new user
// and mount namespaces; it skips where the system allows neither.
func TestDiskTmpfs(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), testChildEnv+"=tmpfs", testDirEnv+"="+t.TempDir())
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getuid(), Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getgid(), Size: 1}},
	}
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	switch {
	case err == nil:
		t.Logf("%s", out)
	case errors.As(err, &exit) && exit.ExitCode() == exitNoMount:
		t.Skipf("cannot mount a tmpfs here: %s", out)
	case errors.As(err, &exit):
		t.Fatalf("child: %v\n%s", err, out)
	default:
		t.Skipf("cannot start a process in new user and mount namespaces here: %v", err)
	}
}

const (
	testChildEnv = "WARMCACHE_SOAK_TEST_CHILD"
	testDirEnv   = "WARMCACHE_SOAK_TEST_DIR"
	exitNoMount  = 3
)

// tmpfsChild is TestDiskTmpfs's child.
func tmpfsChild() error {
	dir := os.Getenv(testDirEnv)
	if err := mountTmpfs(dir, 4<<20); err != nil {
		fmt.Println(err)
		os.Exit(exitNoMount)
	}
	d := &disk{dir: dir, mode: DiskTmpfs}
	what, err := d.fill(0, "")
	if err != nil {
		return err
	}
	fmt.Println(what)
	if err := os.WriteFile(filepath.Join(dir, "more"), make([]byte, 64<<10), 0o600); !errors.Is(err, syscall.ENOSPC) {
		return fmt.Errorf("write on a full tmpfs: %v, want ENOSPC", err)
	}
	if err := d.free(); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "more"), make([]byte, 64<<10), 0o600)
}
