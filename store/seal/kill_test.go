package seal_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/warmcache/warmcache/store/bolt"
	"github.com/warmcache/warmcache/store/bolt/inspect"
	"github.com/warmcache/warmcache/store/codec"
	"github.com/warmcache/warmcache/store/seal"
)

// The re-encryption crash test: a file holds Secrets sealed with key A.
// A child process (this test binary) opens it with the keys [B, A], as a
// controller does after a rotation, and rewrites every object with B the
// way the relist that follows a rotation does (a Replace staged page by
// page, then committed). The parent lets it run a random number of steps
// (pages, then the commit), lets it start the next and kills it with
// SIGKILL at once, so the kill lands anywhere in that step's write. After
// each kill the parent checks that the file opens with [B, A], holds
// every object under one key only (A before the commit, B after: never a
// mix), that each object decodes with its data intact, that Verify finds
// nothing, and that the secret's bytes are nowhere in the file.

const (
	killObjects = 240
	killPage    = 20
	envKillPath = "WARMCACHE_SEAL_TEST_PATH"
)

var (
	killKeyA = bytes.Repeat([]byte{0xa}, seal.KeySize)
	killKeyB = bytes.Repeat([]byte{0xb}, seal.KeySize)
	secretID = bolt.Identity{Version: "v1", Resource: "secrets", Kind: "Secret"}
)

func killSecrets(rv int) []interface{} {
	out := make([]interface{}, killObjects)
	for i := range out {
		out[i] = &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprintf("s-%04d", i), ResourceVersion: strconv.Itoa(rv), UID: "u"},
			Data:       map[string][]byte{"password": secretValue},
		}
	}
	return out
}

// sealedStore opens the Secrets of db sealed with keys.
func sealedStore(ctx context.Context, db *bolt.DB, materials ...[]byte) (*bolt.Store, error) {
	var keys []seal.Key
	for _, m := range materials {
		k, err := seal.NewKey(m)
		if err != nil {
			return nil, err
		}
		keys = append(keys, k)
	}
	inner, err := codec.For(nil, corev1.SchemeGroupVersion.WithKind("Secret"))
	if err != nil {
		return nil, err
	}
	c, err := seal.NewCodec(inner, keys)
	if err != nil {
		return nil, err
	}
	return db.Resource(ctx, bolt.ResourceOptions{Identity: secretID, Codec: c})
}

// relist replaces the content of s with killSecrets(rv), page by page;
// step is called before each page and before the commit, done after each.
func relist(ctx context.Context, s *bolt.Store, rv int, step func() error, done func(string)) error {
	r, err := s.BeginReplace(ctx)
	if err != nil {
		return err
	}
	objs := killSecrets(rv)
	for i := 0; i < len(objs); i += killPage {
		if err := step(); err != nil {
			return err
		}
		if err := r.Add(ctx, objs[i:i+killPage]...); err != nil {
			return err
		}
		done("page")
	}
	if err := step(); err != nil {
		return err
	}
	if err := r.Commit(ctx, strconv.Itoa(rv)); err != nil {
		return err
	}
	done("committed")
	return r.Release()
}

// reencryptChild is the child: one relist with [B, A], each step when a
// byte arrives on stdin, then it waits to be killed.
func reencryptChild() error {
	ctx := context.Background()
	db, err := bolt.Open(ctx, os.Getenv(envKillPath), bolt.Options{Sync: bolt.UnsafeNoSync})
	if err != nil {
		return err
	}
	s, err := sealedStore(ctx, db, killKeyB, killKeyA)
	if err != nil {
		return err
	}
	in := bufio.NewReader(os.Stdin)
	step := func() error { _, err := in.ReadByte(); return err }
	if err := relist(ctx, s, 100, step, func(line string) { fmt.Println(line) }); err != nil {
		return err
	}
	_, _ = in.ReadByte() // until killed
	return errors.New("not killed")
}

func TestKillDuringReencryption(t *testing.T) {
	if testing.Short() {
		t.Skip("kills child processes; runs without -short")
	}
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "cache.db")
	db, err := bolt.Open(ctx, path, bolt.Options{Sync: bolt.UnsafeNoSync})
	if err != nil {
		t.Fatal(err)
	}
	s, err := sealedStore(ctx, db, killKeyA)
	if err != nil {
		t.Fatal(err)
	}
	if err := relist(ctx, s, 1, func() error { return nil }, func(string) {}); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	template, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := seal.NewKey(killKeyA)
	b, _ := seal.NewKey(killKeyB)

	rng := rand.New(rand.NewPCG(uint64(os.Getpid()), 15))
	sawOld, sawNew := false, false
	const steps = killObjects/killPage + 1 // pages, then the commit
	for kill := range 10 {
		// A fresh file sealed with A each time; the last run is killed
		// after its commit returned.
		if err := os.WriteFile(path, template, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Remove(path + ".state"); err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
		completed := rng.IntN(steps)
		if kill == 9 {
			completed = steps
		}
		killChildAfter(t, path, completed)

		db, err := bolt.Open(ctx, path, bolt.Options{Sync: bolt.UnsafeNoSync})
		if err != nil {
			t.Fatalf("kill %d: reopen: %v", kill, err)
		}
		s, err := sealedStore(ctx, db, killKeyB, killKeyA)
		if err != nil {
			t.Fatalf("kill %d: open the resource: %v", kill, err)
		}
		st, err := s.State()
		if err != nil || st.Discarded != "" {
			t.Fatalf("kill %d: state %+v, %v: the data must survive", kill, st, err)
		}
		keys, err := inspect.SealKeys(ctx, db, secretID)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case len(keys) == 1 && keys[a.ID()] == killObjects:
			sawOld = true
			if st.Complete {
				t.Errorf("kill %d: objects sealed with the old key, and the resource is not marked for a relist", kill)
			}
		case len(keys) == 1 && keys[b.ID()] == killObjects:
			sawNew = true
		default:
			t.Fatalf("kill %d: objects per key %v, want all %d under %s (old) or %s (new)", kill, keys, killObjects, a.ID(), b.ID())
		}
		objs := s.List()
		if len(objs) != killObjects {
			t.Fatalf("kill %d: %d objects decode, want %d", kill, len(objs), killObjects)
		}
		for _, o := range objs {
			if sec := o.(*corev1.Secret); !bytes.Equal(sec.Data["password"], secretValue) {
				t.Fatalf("kill %d: %s has data %q", kill, sec.Name, sec.Data["password"])
			}
		}
		var problems []string
		if err := inspect.Verify(ctx, db, nil, func(p inspect.Problem) { problems = append(problems, p.String()) }); err != nil {
			t.Fatal(err)
		}
		if len(problems) > 0 {
			t.Fatalf("kill %d: Verify: %v", kill, problems)
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		assertNoSecretBytesIn(t, path)
	}
	if !sawOld || !sawNew {
		t.Errorf("old content after a kill: %v, new content: %v; want both seen", sawOld, sawNew)
	}
}

// killChildAfter runs the child on path, lets it complete steps steps,
// lets it begin the next one and kills it with SIGKILL.
func killChildAfter(t *testing.T, path string, steps int) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"=1", envKillPath+"="+path)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	for range steps {
		if _, err := in.Write([]byte{1}); err != nil {
			t.Fatalf("child: %v\n%s", err, stderr.String())
		}
		if !sc.Scan() {
			t.Fatalf("child ended early: %v\n%s", sc.Err(), stderr.String())
		}
	}
	_, _ = in.Write([]byte{1})                                  // the next step begins ...
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil { // ... and is cut short
		t.Fatal(err)
	}
	err = cmd.Wait()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("child ended with %v before it was killed:\n%s", err, stderr.String())
	}
}

// assertNoSecretBytesIn fails if the secret's bytes are in the file.
func assertNoSecretBytesIn(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(b, secretValue) {
		t.Fatalf("%s holds the secret's bytes in clear", path)
	}
}
