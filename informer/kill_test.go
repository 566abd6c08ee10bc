package informer

import (
	"bytes"
	"context"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/warmcache/warmcache/internal/fakesource"
	"github.com/warmcache/warmcache/internal/testkit"
	"github.com/warmcache/warmcache/reflector"
	"github.com/warmcache/warmcache/store/bolt"
	"github.com/warmcache/warmcache/store/bolt/inspect"
	"github.com/warmcache/warmcache/store/codec"
)

// Environment of a kill-test child process (the test binary re-executed).
const (
	envKillChild  = "WARMCACHE_INFORMER_KILL_CHILD"
	envKillURL    = "WARMCACHE_INFORMER_KILL_URL"
	envKillDB     = "WARMCACHE_INFORMER_KILL_DB"
	envKillLog    = "WARMCACHE_INFORMER_KILL_LOG"
	envKillTarget = "WARMCACHE_INFORMER_KILL_TARGET"
	// envKillBlockAt makes the child's handler record its N-th add in
	// the file log + ".blocked" and then block until the child is
	// killed: pacing then holds the informer in the middle of its list.
	envKillBlockAt = "WARMCACHE_INFORMER_KILL_BLOCK_AT"
)

// TestKillAndResume runs an informer on a bbolt file in a child process
// against a churning source served over HTTP by this process, kills the
// child with SIGKILL at random moments, and finally lets a child catch
// up: its store must equal the source exactly, the file's indexes must be
// consistent, and every child's handler must have been told exactly the
// changes it was owed (a strict add/update/delete protocol checked in the
// child, violations logged to a file that survives the kill).
func TestKillAndResume(t *testing.T) {
	if testing.Short() {
		t.Skip("kill test skipped in -short mode")
	}
	src, err := fakesource.New(fakesource.Options{BookmarkInterval: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	const initial = 500
	for i := 0; i < initial; i++ {
		if _, err := src.Add(testkit.Pod(fmt.Sprintf("p%04d", i), "")); err != nil {
			t.Fatal(err)
		}
	}
	srv := serveSource(t, src)
	dir := t.TempDir()
	dbPath := filepath.Join(dir, "kill.db")
	logPath := filepath.Join(dir, "violations.log")

	// Churn until the kills are done.
	churnCtx, stopChurn := context.WithCancel(context.Background())
	var churnWG sync.WaitGroup
	var quiet atomic.Bool // no compactions or restarts once set
	churnWG.Go(func() { churn(churnCtx, t, src, initial, &quiet) })

	rng := rand.New(rand.NewSource(time.Now().UnixNano()))
	const kills = 20
	for k := 0; k < kills; k++ {
		// In the second half nothing expires: a resourceVersion persisted
		// ahead of the items would lose events for good, and show.
		quiet.Store(k >= kills/2)
		cmd := childCmd(srv.URL, dbPath, logPath, "")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Kill moments spread over startup, replay and relist (even k:
		// a random delay after the start) and steady watching (odd k: a
		// random delay after the child reported its sync).
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		if k%2 == 1 {
			waitStart := time.Now()
			syncedBefore := countLines(logPath + ".synced")
			err := wait.PollUntilContextTimeout(context.Background(), 5*time.Millisecond, 60*time.Second, true, func(context.Context) (bool, error) {
				select {
				case err := <-exited:
					return false, fmt.Errorf("child exited before it synced: %v\n%s", err, cmd.Stderr)
				default:
				}
				return countLines(logPath+".synced") > syncedBefore, nil
			})
			if err != nil {
				t.Fatalf("child %d: %v", k, err)
			}
			t.Logf("child %d synced after %v", k, time.Since(waitStart))
		}
		delay := time.Duration(rng.Intn(600)) * time.Millisecond
		if k%2 == 1 {
			delay /= 2
		}
		timer := time.NewTimer(delay)
		select {
		case <-timer.C:
			_ = cmd.Process.Signal(syscall.SIGKILL)
			<-exited
		case err := <-exited:
			timer.Stop()
			t.Fatalf("child %d exited before it was killed: %v\n%s", k, err, cmd.Stderr)
		}
	}
	stopChurn()
	churnWG.Wait()
	t.Logf("%d of %d children synced before they were killed; source at RV %s", countLines(logPath+".synced"), kills, src.ResourceVersion())

	// The final child catches up with the stopped source and checks
	// itself.
	target := src.ResourceVersion()
	cmd := childCmd(srv.URL, dbPath, logPath, target)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("final child: %v\n%s", err, cmd.Stderr)
	}
	if len(bytes.TrimSpace(out)) == 0 || !bytes.Contains(out, []byte("caught up")) {
		t.Fatalf("final child did not report catching up: %s", out)
	}
	if v, err := os.ReadFile(logPath); err == nil && len(v) > 0 {
		t.Fatalf("handler protocol violations:\n%s", v)
	}

	// The file itself: equal to the source, indexes consistent.
	ctx := context.Background()
	db, st, err := openKillFile(ctx, dbPath, klog.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	sameAsSource(t, st, src)
	if rv := st.LastStoreSyncResourceVersion(); rv != target {
		t.Fatalf("persisted RV %s, source %s", rv, target)
	}
	var problems []inspect.Problem
	if err := inspect.Verify(ctx, db, nil, func(p inspect.Problem) { problems = append(problems, p) }); err != nil {
		t.Fatal(err)
	}
	if len(problems) > 0 {
		t.Fatalf("%d problems in the file, first: %v", len(problems), problems[0])
	}
}

// openKillFile opens the kill test's file and its pods resource, with the
// children's index.
func openKillFile(ctx context.Context, path string, logger klog.Logger, onCorruption func(error)) (*bolt.DB, *bolt.Store, error) {
	db, err := bolt.Open(ctx, path, bolt.Options{Timeout: 10 * time.Second, Logger: logger})
	if err != nil {
		return nil, nil, err
	}
	c, err := codec.For(nil, podGVK)
	if err != nil {
		_ = db.Close()
		return nil, nil, err
	}
	st, err := db.Resource(ctx, bolt.ResourceOptions{
		Identity:     bolt.Identity{Version: "v1", Resource: "pods", Kind: "Pod"},
		Codec:        c,
		Indexers:     cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc},
		OnCorruption: onCorruption,
	})
	if err != nil {
		_ = db.Close()
		return nil, nil, err
	}
	return db, st, nil
}

// churn changes the source until ctx is done: adds, updates, deletes,
// and now and then a compaction (the next resume gets 410) or an
// apiserver restart.
func churn(ctx context.Context, t *testing.T, src *fakesource.Source, next int, quiet *atomic.Bool) {
	rng := rand.New(rand.NewSource(1))
	live := map[string]bool{}
	for i := 0; i < next; i++ {
		live[fmt.Sprintf("p%04d", i)] = true
	}
	names := func() []string {
		out := make([]string, 0, len(live))
		for n := range live {
			out = append(out, n)
		}
		return out
	}
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for op := 0; ; op++ {
		if op%4 == 0 { // bursts of four changes
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
		addPercent := 30
		if len(live) > 800 {
			addPercent = 10 // keep the source around its initial size
		}
		switch r := rng.Intn(100); {
		case r < addPercent || len(live) < 10:
			name := fmt.Sprintf("p%04d", next)
			next++
			if _, err := src.Add(testkit.Pod(name, "")); err != nil {
				t.Error(err)
				return
			}
			live[name] = true
		case r < 80:
			ns := names()
			o, ok := src.Get(podGVK, "ns", ns[rng.Intn(len(ns))])
			if !ok {
				continue
			}
			p := o.(*corev1.Pod)
			p.Labels = map[string]string{"op": fmt.Sprint(op)}
			if _, err := src.Update(p); err != nil {
				t.Error(err)
				return
			}
		default:
			ns := names()
			name := ns[rng.Intn(len(ns))]
			o, _ := src.Get(podGVK, "ns", name)
			if _, err := src.Delete(o); err != nil {
				t.Error(err)
				return
			}
			delete(live, name)
		}
		switch {
		case quiet.Load():
		case op%9000 == 8999:
			src.Restart()
		case op%6000 == 5999:
			if err := src.Compact(src.ResourceVersion()); err != nil {
				t.Error(err)
				return
			}
		}
	}
}

func countLines(path string) int {
	b, _ := os.ReadFile(path)
	return bytes.Count(b, []byte("\n"))
}

func childCmd(url, db, log, target string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envKillChild+"=1", envKillURL+"="+url, envKillDB+"="+db, envKillLog+"="+log, envKillTarget+"="+target)
	cmd.Stderr = &bytes.Buffer{}
	return cmd
}

// killChildMain is the child process: an informer on the file against the
// served source, with a handler that checks the notification protocol.
// Without a target it runs until killed; with one it waits until the
// store reaches the target resourceVersion, checks the handler's view
// against the store, prints "caught up" and exits.
func killChildMain() int {
	url, dbPath, logPath, target := os.Getenv(envKillURL), os.Getenv(envKillDB), os.Getenv(envKillLog), os.Getenv(envKillTarget)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	logger := klog.Background()
	fail := func(format string, args ...interface{}) int {
		fmt.Fprintf(os.Stderr, format+"\n", args...)
		return 1
	}
	var infPtr *Informer
	var infMu sync.Mutex
	db, st, err := openKillFile(ctx, dbPath, logger, func(err error) {
		infMu.Lock()
		defer infMu.Unlock()
		if infPtr != nil {
			infPtr.ReportCorruption(err)
		}
	})
	if err != nil {
		return fail("open: %v", err)
	}
	defer db.Close()
	cs, err := kubernetes.NewForConfig(&rest.Config{Host: url})
	if err != nil {
		return fail("client: %v", err)
	}
	lw := cache.NewListWatchFromClient(cs.CoreV1().RESTClient(), "pods", "", fields.Everything())
	// Small batches make many commits to be killed in; large enough that
	// the child keeps up with the churn (under -race, on a loaded
	// machine): a warm start is synced only once it has caught up.
	inf, err := New(lw, &corev1.Pod{}, Options{Store: st, Logger: &logger, BatchSize: 64,
		Reflector: reflectorOptionsForKill()})
	if err != nil {
		return fail("new: %v", err)
	}
	infMu.Lock()
	infPtr = inf
	infMu.Unlock()
	logFile, err := os.OpenFile(logPath, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return fail("log: %v", err)
	}
	defer logFile.Close()
	v := &protocolView{view: map[string]string{}, log: logFile, blockFile: logPath + ".blocked"}
	v.blockAt, _ = strconv.Atoi(os.Getenv(envKillBlockAt))
	reg, err := inf.AddEventHandler(v)
	if err != nil {
		return fail("add handler: %v", err)
	}
	done := make(chan struct{})
	go func() { defer close(done); inf.RunWithContext(ctx) }()
	if target == "" {
		// Record the sync, for the parent's summary of kill moments.
		go func() {
			if cache.WaitFor(ctx, "", reg.HasSyncedChecker()) {
				if f, err := os.OpenFile(logPath+".synced", os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600); err == nil {
					fmt.Fprintln(f, os.Getpid())
					_ = f.Close()
				}
			}
		}()
		<-done // until killed
		return 0
	}
	defer func() { cancel(); <-done }()
	wctx, wcancel := context.WithTimeout(ctx, 60*time.Second)
	defer wcancel()
	if !cache.WaitFor(wctx, "", reg.HasSyncedChecker()) {
		return fail("not synced")
	}
	// Handlers are told after the store changes: wait until the store
	// reached the target and the handler's view caught up with it.
	stored := map[string]string{}
	var diff string
	err = wait.PollUntilContextTimeout(wctx, 5*time.Millisecond, 60*time.Second, true, func(context.Context) (bool, error) {
		if st.LastStoreSyncResourceVersion() != target {
			diff = "store at " + st.LastStoreSyncResourceVersion() + ", want " + target
			return false, nil
		}
		stored = map[string]string{}
		for _, o := range st.List() {
			p := o.(*corev1.Pod)
			stored[p.Namespace+"/"+p.Name] = p.ResourceVersion
		}
		v.mu.Lock()
		defer v.mu.Unlock()
		diff = diffMaps(v.view, stored)
		return diff == "", nil
	})
	if err != nil {
		return fail("handler view does not match the store: %v: %s", err, diff)
	}
	fmt.Println("caught up")
	return 0
}

func reflectorOptionsForKill() (o reflector.Options) {
	o.Backoff = &wait.Backoff{Duration: 10 * time.Millisecond, Factor: 2, Cap: 200 * time.Millisecond, Steps: 1000}
	return o
}

// protocolView is a handler that keeps key -> resourceVersion from its
// notifications and logs every notification that breaks the protocol: an
// add for a key it holds, an update or delete for a key it does not hold,
// an update whose old object is not the state it holds.
type protocolView struct {
	mu   sync.Mutex
	view map[string]string
	log  *os.File
	// blockAt, when positive, blocks OnAdd forever once the view holds
	// that many keys, after writing blockFile.
	blockAt   int
	blockFile string
}

func (v *protocolView) violation(format string, args ...interface{}) {
	fmt.Fprintf(v.log, "pid %d: "+format+"\n", append([]interface{}{os.Getpid()}, args...)...)
}

func (v *protocolView) OnAdd(obj interface{}, _ bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	key, _ := cache.MetaNamespaceKeyFunc(obj)
	if rv, ok := v.view[key]; ok {
		v.violation("add %s@%s for a key held at %s", key, rvOf(obj), rv)
	}
	v.view[key] = rvOf(obj)
	if v.blockAt > 0 && len(v.view) == v.blockAt {
		if err := os.WriteFile(v.blockFile, []byte(key+"\n"), 0o600); err != nil {
			v.violation("write %s: %v", v.blockFile, err)
		}
		select {} // until the child is killed
	}
}

func (v *protocolView) OnUpdate(old, new interface{}) {
	v.mu.Lock()
	defer v.mu.Unlock()
	key, _ := cache.MetaNamespaceKeyFunc(new)
	if rv, ok := v.view[key]; !ok || rv != rvOf(old) {
		v.violation("update %s %s -> %s, held %q (%v)", key, rvOf(old), rvOf(new), rv, ok)
	}
	v.view[key] = rvOf(new)
}

func (v *protocolView) OnDelete(obj interface{}) {
	v.mu.Lock()
	defer v.mu.Unlock()
	key, _ := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if _, ok := v.view[key]; !ok {
		v.violation("delete %s for a key not held", key)
	}
	delete(v.view, key)
}
