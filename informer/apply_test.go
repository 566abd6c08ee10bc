package informer

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"

	"github.com/warmcache/warmcache/internal/testkit"
	"github.com/warmcache/warmcache/store"
	"github.com/warmcache/warmcache/store/bolt"
)

// failingStore fails Apply while failures > 0, like a full disk. With
// lastFailure set, the Apply that returns the last failure first waits
// until lastFailure is closed, so a test can look at the informer while
// its writes are failing for as long as it needs.
type failingStore struct {
	store.Store
	mu          sync.Mutex
	failures    int
	applies     int
	onApply     func(rv string)
	lastFailure chan struct{}
}

var errDiskFull = fmt.Errorf("%w: %w", bolt.ErrDiskFull, syscall.ENOSPC)

func (s *failingStore) Apply(ctx context.Context, txns []cache.Transaction, rv string) error {
	s.mu.Lock()
	s.applies++
	if s.failures > 0 {
		s.failures--
		wait := s.lastFailure
		if s.failures > 0 {
			wait = nil
		}
		s.mu.Unlock()
		if wait != nil {
			<-wait
		}
		return fmt.Errorf("apply: %w", errDiskFull)
	}
	s.mu.Unlock()
	if err := s.Store.Apply(ctx, txns, rv); err != nil {
		return err
	}
	if s.onApply != nil {
		s.onApply(rv)
	}
	return nil
}

// healthMetrics records Healthy and Applied reports.
type healthMetrics struct {
	NoopMetrics
	mu       sync.Mutex
	healthy  []bool
	failures int
}

func (m *healthMetrics) Healthy(ok bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.healthy = append(m.healthy, ok)
}

func (m *healthMetrics) Applied(_ time.Duration, _ int, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err != nil {
		m.failures++
	}
}

func TestApplyFailureRetriedAndSurfaced(t *testing.T) {
	fs := &failingStore{Store: newMemStore(t)}
	hm := &healthMetrics{}
	inf := newTestInformer(t, Options{Store: fs, Metrics: hm, ApplyBackoff: time.Millisecond, ApplyBackoffCap: 2 * time.Millisecond})
	rec := newRecorder()
	if _, err := inf.AddEventHandler(rec); err != nil {
		t.Fatal(err)
	}
	h := startHarness(t, inf)
	h.relist("10", testkit.Pod("a", "1"))
	rec.WaitFor(t, 1)
	release := make(chan struct{})
	fs.mu.Lock()
	fs.failures = 5
	fs.lastFailure = release
	fs.mu.Unlock()
	h.must(h.q.Update(h.ctx, testkit.Pod("a", "11")))
	// While the write fails, Err reports it: the last failure waits for
	// this check, so the first four have been reported.
	var sawErr error
	err := wait.PollUntilContextTimeout(h.ctx, time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		sawErr = inf.Err()
		return sawErr != nil, nil
	})
	close(release)
	if err != nil {
		t.Fatalf("Err never reported the failing write: %v", err)
	}
	if !errors.Is(sawErr, ErrStoreWrite) || !errors.Is(sawErr, bolt.ErrDiskFull) {
		t.Fatalf("Err = %v, want ErrStoreWrite wrapping ErrDiskFull", sawErr)
	}
	got := rec.WaitFor(t, 2)
	equalEvents(t, got, []event{"add ns/a@1 initial=true", "update ns/a@1 -> ns/a@11"})
	if err := inf.Err(); err != nil {
		t.Fatalf("Err after a successful write: %v", err)
	}
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if fs.applies < 6 {
		t.Fatalf("%d Apply calls, want at least 6 (5 failures and a success)", fs.applies)
	}
	hm.mu.Lock()
	defer hm.mu.Unlock()
	if hm.failures != 5 {
		t.Fatalf("metrics saw %d failed writes, want 5", hm.failures)
	}
	if n := len(hm.healthy); n < 2 || hm.healthy[0] || !hm.healthy[n-1] {
		t.Fatalf("Healthy reports %v, want unhealthy then healthy", hm.healthy)
	}
}

// TestPersistedRVNeverAhead checks invariant 1 through the informer: after
// every Apply, each key of the store is at least as new as the source's
// state at the persisted resourceVersion, so a watch resumed from it
// misses nothing.
func TestPersistedRVNeverAhead(t *testing.T) {
	for _, seed := range []int64{1, 2, 3} {
		t.Run(strconv.FormatInt(seed, 10), func(t *testing.T) {
			rng := rand.New(rand.NewSource(seed))
			// history[rv] = (key, state after the event; nil if deleted)
			type ev struct {
				key string
				rv  int
				del bool
			}
			var history []ev
			live := map[string]bool{}
			rv := 10
			for len(history) < 2000 {
				rv += 1 + rng.Intn(3)
				key := fmt.Sprintf("p%d", rng.Intn(40))
				history = append(history, ev{key: key, rv: rv, del: live[key] && rng.Intn(4) == 0})
				live[key] = !history[len(history)-1].del
			}
			stateAt := func(at int) map[string]int {
				m := map[string]int{}
				for _, e := range history {
					if e.rv > at {
						break
					}
					if e.del {
						delete(m, e.key)
					} else {
						m[e.key] = e.rv
					}
				}
				return m
			}
			mem := newMemStore(t)
			var violations []string
			var vmu sync.Mutex
			fs := &failingStore{Store: mem}
			// A batch may hold deltas newer than its safe resourceVersion,
			// so a key may be ahead of the persisted RV P, never behind:
			// its stored state must be one the source had at P or later.
			fs.onApply = func(string) {
				persisted, _ := strconv.Atoi(mem.LastStoreSyncResourceVersion())
				atP := stateAt(persisted)
				check := func(key string) {
					got, ok, _ := mem.ResourceVersionOf("ns/" + key)
					g, _ := strconv.Atoi(got)
					fine := false
					if wantRV, present := atP[key]; (ok && present && g == wantRV) || (!ok && !present) {
						fine = true
					}
					for _, e := range history {
						if e.key == key && e.rv > persisted && ((ok && !e.del && e.rv == g) || (!ok && e.del)) {
							fine = true
						}
					}
					if !fine {
						vmu.Lock()
						violations = append(violations, fmt.Sprintf("at persisted RV %d key %s has %q (present %v), source had %d (present %v) then", persisted, key, got, ok, atP[key], atP[key] != 0))
						vmu.Unlock()
					}
				}
				for k := 0; k < 40; k++ {
					check(fmt.Sprintf("p%d", k))
				}
			}
			inf := newTestInformer(t, Options{Store: fs, BatchSize: 1 + rng.Intn(7), QueueCapacity: 50})
			h := startHarness(t, inf)
			h.relist("10")
			for i, e := range history {
				p := testkit.Pod(e.key, strconv.Itoa(e.rv))
				switch {
				case e.del:
					h.must(h.q.Delete(h.ctx, p))
				case i%2 == 0:
					h.must(h.q.Add(h.ctx, p))
				default:
					h.must(h.q.Update(h.ctx, p))
				}
				if rng.Intn(20) == 0 {
					h.must(h.q.Bookmark(h.ctx, strconv.Itoa(e.rv)))
				}
			}
			final := strconv.Itoa(rv + 1)
			h.waitIdle(final)
			vmu.Lock()
			defer vmu.Unlock()
			if len(violations) > 0 {
				t.Fatalf("%d violations, first: %s", len(violations), violations[0])
			}
			want := stateAt(rv)
			if got := len(mem.ListKeys()); got != len(want) {
				t.Fatalf("store has %d keys, source %d", got, len(want))
			}
		})
	}
}

func TestReplayIsPaced(t *testing.T) {
	mem := newMemStore(t)
	const n = 3000
	objs := make([]interface{}, n)
	for i := range objs {
		objs[i] = testkit.Pod(fmt.Sprintf("p%05d", i), strconv.Itoa(i+1))
	}
	if err := mem.Replace(objs, strconv.Itoa(n+1)); err != nil {
		t.Fatal(err)
	}
	const bound = 50
	inf := newTestInformer(t, Options{Store: mem, ReplayPending: bound})
	var maxPending int64
	var reg *listener
	slow := cache.ResourceEventHandlerDetailedFuncs{AddFunc: func(interface{}, bool) {
		if p := reg.pending.Load(); p > maxPending {
			maxPending = p
		}
		time.Sleep(10 * time.Microsecond)
	}}
	r, err := inf.AddEventHandler(slow)
	if err != nil {
		t.Fatal(err)
	}
	reg = r.(*listener)
	h := startHarness(t, inf) // warm start: the store is complete
	h.must(h.q.MarkSynced(h.ctx))
	<-r.HasSyncedChecker().Done()
	// The replayer adds one notification after waiting for pending <= bound.
	if maxPending > bound+1 {
		t.Fatalf("a handler had %d notifications pending during the replay, bound %d", maxPending, bound)
	}
	if maxPending < bound/2 {
		t.Fatalf("max pending %d: the replay never got ahead of the handler; the test proves nothing", maxPending)
	}
}
