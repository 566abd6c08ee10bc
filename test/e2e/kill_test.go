package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/warmcache/warmcache/internal/demo"
)

const (
	// killRounds is the number of random kill moments.
	killRounds = 20
	// killPods is the size of the kill test's namespace at the start.
	killPods = 200
	// killWindow bounds the random moment of each kill after the start:
	// it covers the open, the replay, the resumed watch and the churn
	// applied after it.
	killWindow = 3 * time.Second
)

// TestKillAtRandomMoments: the controller is SIGKILLed at random moments
// while pods are created, updated and deleted. After each kill the churn
// pauses, the controller restarts on the same file, and its handler's view
// converges to the server's pods; killed again once converged, its file
// holds exactly the server's pods, complete, and passes Verify (invariants
// 1, 2 and 4).
func TestKillAtRandomMoments(t *testing.T) {
	t.Parallel()
	ctx := needEnv(t)
	c, ns := sharedCluster(ctx, t, "kill")
	c.createPods(ctx, t, ns, 0, killPods)
	file := filepath.Join(t.TempDir(), "cache.db")
	opts := childOptions{kubeconfig: c.kubeconfig, cacheFile: file, namespace: ns}
	seed := uint64(time.Now().UnixNano())
	t.Logf("random seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	churn := newChurner(c, ns, seed)

	for round := range killRounds {
		churn.resume(ctx)
		victim := startChild(t, opts)
		after := time.Duration(rng.Int64N(int64(killWindow)))
		select {
		case <-time.After(after): // the random kill moment, not a wait for anything
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		}
		victim.Kill()
		if err := churn.pause(); err != nil {
			t.Fatalf("round %d: churn: %v", round, err)
		}
		want := c.listPods(ctx, t, ns)

		check := startChild(t, opts)
		check.waitConverged(ctx, want)
		check.Kill()
		got := readCache(ctx, t, file, podsIdentity(ns))
		if d := got.items.diff(want); d != "" {
			t.Fatalf("round %d (killed after %v): the cache file differs from the server: %s", round, after, d)
		}
		if got.info.State != "complete" {
			t.Fatalf("round %d: cache file state %q (%s), want complete", round, got.info.State, got.info.Reason)
		}
		t.Logf("round %d: killed after %v, %s; restarted, converged to %d pods", round, after.Round(time.Millisecond), phase(victim.Events()), len(want))
	}
	t.Logf("churn: %s", churn)
}

// phase describes how far a killed run got.
func phase(es []event) string {
	for i, e := range es {
		if e.Type == "synced" {
			live := 0
			for _, e := range es[i+1:] {
				if e.Key != "" {
					live++
				}
			}
			return fmt.Sprintf("after sync and %d live events", live)
		}
	}
	if len(es) == 0 {
		return "before any event"
	}
	return fmt.Sprintf("before sync, %d events delivered", len(es))
}

// churner creates, updates and deletes pods of one namespace from two
// goroutines, between resume and pause.
type churner struct {
	c  *cluster
	ns string

	// mu guards the fields below.
	mu      sync.Mutex
	rng     *rand.Rand // seeds the workers' generators
	stop    chan struct{}
	wg      sync.WaitGroup
	err     error
	ops     map[string]int
	present [2]map[int]bool // churn pods alive, per worker
	next    [2]int          // next pod index per worker
}

func newChurner(c *cluster, ns string, seed uint64) *churner {
	return &churner{c: c, ns: ns, rng: rand.New(rand.NewPCG(seed, 2)), ops: map[string]int{}, present: [2]map[int]bool{{}, {}}, next: [2]int{1_000_000, 2_000_000}}
}

func (ch *churner) String() string {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	return fmt.Sprint(ch.ops)
}

// resume starts the workers.
func (ch *churner) resume(ctx context.Context) {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	ch.stop = make(chan struct{})
	for w := range 2 {
		rng := rand.New(rand.NewPCG(ch.rng.Uint64(), ch.rng.Uint64()))
		stop := ch.stop
		ch.wg.Go(func() { ch.work(ctx, w, rng, stop) })
	}
}

// pause stops the workers, waits for their requests to end, and returns
// the first error any of them met.
func (ch *churner) pause() error {
	ch.mu.Lock()
	close(ch.stop)
	ch.mu.Unlock()
	ch.wg.Wait()
	ch.mu.Lock()
	defer ch.mu.Unlock()
	return ch.err
}

func (ch *churner) fail(err error) {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	if ch.err == nil {
		ch.err = err
	}
}

func (ch *churner) count(op string) {
	ch.mu.Lock()
	ch.ops[op]++
	ch.mu.Unlock()
}

// work runs operations until stop: creates and deletes of its own churn
// pods, and label updates of any pod of the namespace's first killPods.
func (ch *churner) work(ctx context.Context, w int, rng *rand.Rand, stop <-chan struct{}) {
	pods := ch.c.cs.CoreV1().Pods(ch.ns)
	for {
		select {
		case <-stop:
			return
		case <-ctx.Done():
			return
		default:
		}
		ch.mu.Lock()
		present := ch.present[w]
		var alive []int
		for i := range present {
			alive = append(alive, i)
		}
		ch.mu.Unlock()
		var err error
		switch op := rng.IntN(3); {
		case op == 0 || len(alive) == 0:
			ch.mu.Lock()
			i := ch.next[w]
			ch.next[w]++
			ch.mu.Unlock()
			_, err = pods.Create(ctx, demo.NewPod(i, ch.ns), metav1.CreateOptions{})
			if err == nil {
				ch.mu.Lock()
				present[i] = true
				ch.mu.Unlock()
				ch.count("create")
			}
		case op == 1:
			i := alive[rng.IntN(len(alive))]
			err = pods.Delete(ctx, demo.NewPod(i, ch.ns).Name, *metav1.NewDeleteOptions(0))
			if err == nil {
				ch.mu.Lock()
				delete(present, i)
				ch.mu.Unlock()
				ch.count("delete")
			}
		default:
			name := demo.NewPod(rng.IntN(killPods), ch.ns).Name
			patch := fmt.Sprintf(`{"metadata":{"labels":{"churn":"%d"}}}`, rng.Uint32())
			_, err = pods.Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
			if err == nil {
				ch.count("update")
			}
		}
		if err != nil && ctx.Err() == nil {
			ch.fail(err)
			return
		}
	}
}
