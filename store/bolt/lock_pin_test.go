package bolt_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/warmcache/warmcache/store/bolt"
	"github.com/warmcache/warmcache/store/codec"
)

// The hot tier of decoded objects (hot.go) answers reads without looking
// at the file, trusting that nothing but its own DB writes the file. These
// tests pin what that relies on, through the public API only, so that
// they hold for any correct locking: while a read-write DB is open, every
// other read-write Open of the same file in this process is refused with
// ErrLocked, whatever path names the file, and the file opens again once
// the DB is closed.

// pinOptions fails a refused Open quickly.
var pinOptions = bolt.Options{Sync: bolt.UnsafeNoSync, Timeout: 20 * time.Millisecond}

var pinPods = bolt.ResourceOptions{
	Identity: bolt.Identity{Version: "v1", Resource: "pods", Kind: "Pod"},
	Codec:    codec.Protobuf(nil),
}

func pinOpen(t *testing.T, path string) *bolt.DB {
	t.Helper()
	db, err := bolt.Open(context.Background(), path, pinOptions)
	if err != nil {
		t.Fatal(err)
	}
	return db
}

// TestPinSecondWriterRefused: a second read-write Open of an open file is
// refused with ErrLocked, by the path it was opened with and by every
// other name of the file (a cleaned path, a symbolic link, a hard link);
// after Close the file opens again, with what the first DB wrote.
func TestPinSecondWriterRefused(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "cache.db")
	first := pinOpen(t, path)
	pods, err := first.Resource(ctx, pinPods)
	if err != nil {
		t.Fatal(err)
	}
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a", ResourceVersion: "1"}}
	if err := pods.Add(p); err != nil {
		t.Fatal(err)
	}
	symlink, hardlink := filepath.Join(dir, "symlink.db"), filepath.Join(dir, "hardlink.db")
	if err := os.Symlink(path, symlink); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(path, hardlink); err != nil {
		t.Fatal(err)
	}
	for name, p := range map[string]string{
		"same path":     path,
		"unclean path":  dir + "/./cache.db",
		"symbolic link": symlink,
		"hard link":     hardlink,
	} {
		t.Run(name, func(t *testing.T) {
			db, err := bolt.Open(ctx, p, pinOptions)
			if err == nil {
				_ = db.Close()
			}
			if !errors.Is(err, bolt.ErrLocked) {
				t.Fatalf("read-write Open of %s while a read-write DB has it open = %v, want ErrLocked", p, err)
			}
		})
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	second := pinOpen(t, path)
	defer func() {
		if err := second.Close(); err != nil {
			t.Error(err)
		}
	}()
	pods, err = second.Resource(ctx, pinPods)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, err := pods.GetByKey("ns/a"); err != nil || !ok {
		t.Fatalf("after the first DB closed, the second reads ns/a: found %v, %v", ok, err)
	}
}
