package bolt

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"

	"github.com/warmcache/warmcache/store"
	"github.com/warmcache/warmcache/store/bolt/internal/layout"
	"github.com/warmcache/warmcache/store/bolt/internal/syncstate"
)

// The crash test: a child process (this test binary, role "crash") applies
// batches and relists to a file and is killed with SIGKILL at random
// moments; after each kill the parent reopens the file and checks
//
//   - invariant 1: the stored objects are exactly the server's state at the
//     recorded RV (the "server" is a deterministic event stream, so the
//     parent knows the state at any RV);
//   - invariant 2: the state is complete whenever an RV is recorded (the
//     child relists before anything else), never a mix of two relists;
//   - invariant 4: Verify reports nothing.

const (
	envCrashPath = "WARMCACHE_BOLT_CRASH_PATH"
	envCrashSeed = "WARMCACHE_BOLT_CRASH_SEED"
	envCrashN0   = "WARMCACHE_BOLT_CRASH_N0"
)

func init() { childRoles["crash"] = childCrash }

// crashWorld is the server's state: object id -> RV of its last change.
// Events 1..n0 create objects 1..n0; event i > n0 upserts or deletes a
// pseudo-random id in [1, n0*11/10], derived from (seed, i) only.
type crashWorld struct {
	seed uint64
	n0   int
	rv   int
	objs map[int]int
}

func newCrashWorld(seed uint64, n0 int) *crashWorld {
	return &crashWorld{seed: seed, n0: n0, objs: map[int]int{}}
}

func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// event returns the id event i changes and whether it deletes it.
func (w *crashWorld) event(i int) (id int, del bool) {
	if i <= w.n0 {
		return i, false
	}
	h := splitmix(w.seed ^ uint64(i)*0x9e3779b97f4a7c15)
	return 1 + int((h>>8)%uint64(w.n0*11/10)), h%10 >= 7
}

// step applies event w.rv+1 and returns it.
func (w *crashWorld) step() (id int, del bool) {
	w.rv++
	id, del = w.event(w.rv)
	if del {
		delete(w.objs, id)
	} else {
		w.objs[id] = w.rv
	}
	return id, del
}

func (w *crashWorld) advanceTo(rv int) {
	for w.rv < rv {
		w.step()
	}
}

// crashPod is object id as changed at rv.
func crashPod(id, rv int) *corev1.Pod {
	return &corev1.Pod{
		TypeMeta: metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"},
		ObjectMeta: metav1.ObjectMeta{
			Namespace: fmt.Sprintf("ns-%02d", id%16), Name: fmt.Sprintf("p-%06d", id),
			ResourceVersion: strconv.Itoa(rv),
			Labels:          map[string]string{"m": strconv.Itoa(rv % 7)},
			Annotations:     map[string]string{"data": fmt.Sprintf("%d-%d", id, rv*31)},
		},
	}
}

func crashKey(id int) string { return fmt.Sprintf("ns-%02d/p-%06d", id%16, id) }

func crashIndexers() cache.Indexers {
	return cache.Indexers{
		cache.NamespaceIndex: cache.MetaNamespaceIndexFunc,
		"m": func(obj interface{}) ([]string, error) {
			return []string{obj.(*corev1.Pod).Labels["m"]}, nil
		},
	}
}

func crashOpen(ctx context.Context, path string) (*DB, *Store, error) {
	db, err := Open(ctx, path, Options{})
	if err != nil {
		return nil, nil, err
	}
	s, err := db.Resource(ctx, ResourceOptions{Identity: podsID, Codec: podCodec, Indexers: crashIndexers()})
	if err != nil {
		_ = db.Close()
		return nil, nil, err
	}
	return db, s, nil
}

// childCrash writes until it is killed, printing a line per step:
// "apply RV", "replace-page RV N", "replace-vanished RV", "replace-commit
// RV", "replace-changes RV", "replace-release RV".
func childCrash() error {
	ctx := context.Background()
	seed, _ := strconv.ParseUint(os.Getenv(envCrashSeed), 10, 64)
	n0, _ := strconv.Atoi(os.Getenv(envCrashN0))
	_, s, err := crashOpen(ctx, os.Getenv(envCrashPath))
	if err != nil {
		return err
	}
	st, err := s.State()
	if err != nil {
		return err
	}
	w := newCrashWorld(seed, n0)
	rv := 0
	if st.ResourceVersion != "" {
		if rv, err = strconv.Atoi(st.ResourceVersion); err != nil {
			return err
		}
	}
	w.advanceTo(rv)
	rng := rand.New(rand.NewPCG(seed, uint64(os.Getpid())))
	out := bufio.NewWriter(os.Stdout)
	say := func(format string, args ...any) {
		fmt.Fprintf(out, format+"\n", args...)
		_ = out.Flush()
	}
	say("ready %d", rv)
	deadline := time.Now().Add(2 * time.Minute) // in case the parent is gone
	for first := !st.Complete; time.Now().Before(deadline); first = false {
		if !first && rng.IntN(25) != 0 {
			n := 1 + rng.IntN(200)
			txns := make([]cache.Transaction, n)
			for i := range txns {
				id, del := w.step()
				typ := cache.TransactionTypeUpdate
				if del {
					typ = cache.TransactionTypeDelete
				}
				txns[i] = cache.Transaction{Type: typ, Object: crashPod(id, w.rv)}
			}
			if err := s.Apply(ctx, txns, strconv.Itoa(w.rv)); err != nil {
				return err
			}
			say("apply %d", w.rv)
			continue
		}
		if err := crashRelist(ctx, s, w, rng, say); err != nil {
			return err
		}
	}
	return errors.New("not killed in time")
}

// crashRelist relists the world at a later RV, checking Vanished.
func crashRelist(ctx context.Context, s *Store, w *crashWorld, rng *rand.Rand, say func(string, ...any)) error {
	before := make(map[string]bool, len(w.objs))
	for id := range w.objs {
		before[crashKey(id)] = true
	}
	w.advanceTo(max(w.rv, w.n0) + rng.IntN(500))
	r, err := s.BeginReplace(ctx)
	if err != nil {
		return err
	}
	ids := make([]int, 0, len(w.objs))
	for id := range w.objs {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	page := make([]interface{}, 0, 1000)
	for i, id := range ids {
		page = append(page, crashPod(id, w.objs[id]))
		if len(page) == cap(page) || i == len(ids)-1 {
			if err := r.Add(ctx, page...); err != nil {
				return err
			}
			say("replace-page %d %d", w.rv, i/1000)
			page = page[:0]
		}
	}
	for id := range w.objs {
		delete(before, crashKey(id))
	}
	// Objects stored before (the file may be behind w if this is the
	// first relist after a restart) that the world no longer has.
	if err := r.Vanished(ctx, func(key string, _ interface{}) error {
		if !before[key] && !strings.HasPrefix(key, "ns-") {
			return fmt.Errorf("vanished %q is not a crash object", key)
		}
		if _, ok := w.objs[crashID(key)]; ok {
			return fmt.Errorf("vanished %q is in the listed state", key)
		}
		return nil
	}); err != nil {
		return err
	}
	say("replace-vanished %d", w.rv)
	if err := r.Commit(ctx, strconv.Itoa(w.rv)); err != nil {
		return err
	}
	say("replace-commit %d", w.rv)
	// The replaced generation is retained until Release: a kill from here
	// on must leave the committed content and no retained generation.
	if err := r.Changes(ctx, func(c store.Change) error {
		m, ok := w.objs[crashID(c.Key)]
		switch {
		case c.New == nil && ok:
			return fmt.Errorf("change: %q deleted but in the listed state", c.Key)
		case c.New != nil && (!ok || c.New.(*corev1.Pod).ResourceVersion != strconv.Itoa(m)):
			return fmt.Errorf("change: %q at RV %s, want %d", c.Key, c.New.(*corev1.Pod).ResourceVersion, m)
		}
		return nil
	}); err != nil {
		return err
	}
	say("replace-changes %d", w.rv)
	if err := r.Release(); err != nil {
		return err
	}
	say("replace-release %d", w.rv)
	return nil
}

func crashID(key string) int {
	i := strings.LastIndex(key, "-")
	id, _ := strconv.Atoi(key[i+1:])
	return id
}

// TestCrash kills a writing child at random moments and checks invariants
// 1, 2 and 4 after each kill. Set WARMCACHE_BOLT_CRASH_SEED to replay a
// run.
func TestCrash(t *testing.T) {
	n0, kills := 50000, 22
	switch {
	case testing.Short():
		n0, kills = 5000, 7 // one kill per phase
	case raceEnabled:
		n0 = 20000 // the race detector slows the child and the checks tenfold
	}
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv(envCrashSeed); v != "" {
		var err error
		if seed, err = strconv.ParseUint(v, 10, 64); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("seed %d (set %s to replay), %d objects, %d kills", seed, envCrashSeed, n0, kills)
	rng := rand.New(rand.NewPCG(seed, 1))
	path := tempPath(t)
	w := newCrashWorld(seed, n0)
	interrupted, pageKills := 0, 0
	// The first kill lets the initial relist commit; the others cycle
	// through the phases of the child's work.
	phases := []string{"apply", "replace-page", "ready", "replace-vanished", "apply", "replace-commit", "replace-changes"}
	for k := range kills {
		phase, after := "replace-commit", 1
		if k > 0 {
			phase = phases[k%len(phases)]
			if phase == "apply" || phase == "replace-page" {
				after = 1 + rng.IntN(3)
			}
		}
		delay := time.Duration(rng.IntN(2000)) * time.Microsecond
		lines, reached := crashRun(t, path, seed, n0, phase, after, delay)
		if phase == "replace-page" && reached {
			pageKills++
		}
		st := crashCheck(t, path, w)
		t.Logf("kill %d after %q x%d +%v (reached %v): RV %d, %d objects, interrupted relist %v (last lines %q)",
			k, phase, after, delay, reached, w.rv, st.Objects, st.RelistInterrupted, lines)
		if st.RelistInterrupted {
			interrupted++
		}
		if t.Failed() {
			t.Fatalf("invariant broken after kill %d; replay with %s=%d", k, envCrashSeed, seed)
		}
	}
	if w.rv == 0 {
		t.Error("the child never committed a relist")
	}
	if pageKills > 0 && interrupted == 0 {
		t.Errorf("%d kills in the middle of a relist, none reported an interrupted relist", pageKills)
	}
}

// crashRun starts the child and kills it delay after its after-th line
// starting with phase, or after crashTimeout without one. It returns the
// last lines the child printed and whether the phase was reached.
func crashRun(t *testing.T, path string, seed uint64, n0 int, phase string, after int, delay time.Duration) ([]string, bool) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"=crash", envCrashPath+"="+path,
		envCrashSeed+"="+strconv.FormatUint(seed, 10), envCrashN0+"="+strconv.Itoa(n0))
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	var last []string
	seen, reached := 0, false
	timeout := time.After(crashTimeout)
wait:
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				break wait // the child exited by itself: reported below
			}
			last = append(last, l)
			if len(last) > 3 {
				last = last[1:]
			}
			if strings.HasPrefix(l, phase+" ") {
				if seen++; seen == after {
					reached = true
					<-time.After(delay)
					break wait
				}
			}
		case <-timeout:
			break wait
		}
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	for range lines { // drain until the pipe closes
	}
	err = cmd.Wait()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("child did not die by SIGKILL: %v\n%s", err, stderr.String())
	}
	return last, reached
}

// crashTimeout bounds the wait for a phase; the child is killed then
// anyway, which is one more random kill point.
const crashTimeout = 30 * time.Second

// crashCheck reopens the file and checks it against the world at the
// recorded RV, advancing w to it.
func crashCheck(t *testing.T, path string, w *crashWorld) store.State {
	t.Helper()
	ctx := context.Background()
	// The child wrote with SyncOnClose and was killed, not closed: its
	// file is trusted in this boot of the machine only.
	if st := mustSyncState(t, path); st.State != syncstate.Open {
		t.Errorf("state file after a kill = %+v, want open", st)
	}
	func() {
		prev := bootID
		defer func() { bootID = prev }()
		bootID = func() (string, error) { return "a later boot", nil }
		if db, err := Open(ctx, path, Options{ReadOnly: true}); !errors.Is(err, ErrUnflushed) {
			t.Errorf("Open of a killed writer's file after a restart = %v, want ErrUnflushed", err)
			if err == nil {
				_ = db.Close()
			}
		}
	}()
	db, s, err := crashOpen(ctx, path)
	if err != nil {
		t.Fatalf("reopen after kill: %v", err)
	}
	defer func() { _ = db.Close() }()
	st, err := s.State()
	if err != nil {
		t.Fatal(err)
	}
	if st.ResourceVersion == "" {
		if st.Complete || st.Objects != 0 || len(s.ListKeys()) != 0 {
			t.Errorf("no RV recorded but state %+v", st)
		}
		return st
	}
	rv, err := strconv.Atoi(st.ResourceVersion)
	if err != nil {
		t.Fatal(err)
	}
	if rv < w.rv {
		t.Fatalf("recorded RV %d went back from %d", rv, w.rv)
	}
	w.advanceTo(rv)
	if !st.Complete {
		t.Errorf("RV %d recorded but the state is not complete", rv)
	}
	// Compare keys and RVs from the envelopes; Verify below checks that
	// every item decodes to an object of its envelope's RV, and the
	// content of an object is a function of its key and RV.
	seen := 0
	if err := s.readLive("check", func(g *layout.Generation) error {
		c := g.Items.Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			seen++
			key := string(k)
			id := crashID(key)
			m, ok := w.objs[id]
			if !ok {
				return fmt.Errorf("RV %d: %s is stored but deleted at or before it", rv, key)
			}
			env, err := g.EnvelopeOf(k, v)
			got := ""
			if err == nil {
				got, err = layout.EnvelopeRV(env)
			}
			if err != nil || key != crashKey(id) || got != strconv.Itoa(m) {
				return fmt.Errorf("RV %d: %s stored at RV %s (%v), want %d", rv, key, got, err, m)
			}
		}
		return nil
	}); err != nil {
		t.Error(err)
	}
	if seen != len(w.objs) || st.Objects != len(w.objs) {
		t.Errorf("RV %d: %d objects stored (%d recorded), want %d", rv, seen, st.Objects, len(w.objs))
	}
	if err := verifyErr(ctx, db); err != nil {
		t.Errorf("Verify after kill: %v", err)
	}
	crashCheckSelect(t, s, w, rv)
	// A generation staged or retained (killed between Commit and Release)
	// is deleted by the open.
	if n := generations(t, s); n != 1 {
		t.Errorf("RV %d: %d generations after reopen, want the live one only", rv, n)
	}
	return st
}

// crashCheckSelect checks that a selection by namespace and labels, read
// from the item entries without decoding the others, selects what the
// world holds at rv.
func crashCheckSelect(t *testing.T, s *Store, w *crashWorld, rv int) {
	t.Helper()
	var want []string
	for id, m := range w.objs {
		if id%16 == 5 && m%7 == 3 {
			want = append(want, crashKey(id))
		}
	}
	slices.Sort(want)
	var got []string
	sel := store.Selection{Namespace: "ns-05", Labels: labels.SelectorFromSet(labels.Set{"m": "3"})}
	if err := s.Select(context.Background(), sel, func(key string, obj interface{}) error {
		if p := obj.(*corev1.Pod); p.Labels["m"] != "3" || p.Namespace != "ns-05" {
			return fmt.Errorf("%s selected with labels %v in %s", key, p.Labels, p.Namespace)
		}
		got = append(got, key)
		return nil
	}); err != nil {
		t.Errorf("RV %d: Select: %v", rv, err)
	}
	if !slices.Equal(got, want) {
		t.Errorf("RV %d: Select(ns-05, m=3) = %d keys, want %d", rv, len(got), len(want))
	}
}
