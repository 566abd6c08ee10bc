package deltafifo_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/warmcache/warmcache/deltafifo"
	"github.com/warmcache/warmcache/internal/testkit"
)

// rvModel records what a randomised producer pushed and what the consumer
// popped, and checks invariant 1 at every pop.
type rvModel struct {
	t      *testing.T
	seed   uint64
	rv     int             // last resourceVersion pushed
	events []int           // resourceVersions of pushed deltas and list ends, in push order
	popped map[int]bool    // resourceVersions popped
	exists map[string]bool // watch state per key, so deletes never repeat
	lastOf map[string]int  // last resourceVersion popped per key
	// delivered is the newest safe resourceVersion handed out.
	delivered int
}

func (m *rvModel) next() string {
	m.rv++
	return strconv.Itoa(m.rv)
}

func (m *rvModel) fatalf(format string, args ...interface{}) {
	m.t.Helper()
	m.t.Fatalf("seed %d: %s", m.seed, fmt.Sprintf(format, args...))
}

// checkPopped verifies batch b: per-key order, exactly-once delivery, and
// that its safe resourceVersion does not run ahead of an unpopped event.
func (m *rvModel) checkPopped(b deltafifo.Batch) {
	m.t.Helper()
	for i, ds := range b.Deltas {
		for _, d := range ds {
			if d.Type == cache.Sync {
				continue
			}
			p := d.Object.(*corev1.Pod)
			if p.ResourceVersion == "" {
				continue
			}
			rv, _ := strconv.Atoi(p.ResourceVersion)
			if m.popped[rv] {
				m.fatalf("event %d popped twice", rv)
			}
			m.popped[rv] = true
			if rv <= m.lastOf[b.Keys[i]] {
				m.fatalf("key %s: event %d popped after %d", b.Keys[i], rv, m.lastOf[b.Keys[i]])
			}
			m.lastOf[b.Keys[i]] = rv
		}
	}
	if b.Kind != deltafifo.KindDeltas && b.Kind != deltafifo.KindReplaceEnd {
		return
	}
	if b.ResourceVersion == "" {
		return
	}
	safe, err := strconv.Atoi(b.ResourceVersion)
	if err != nil {
		m.fatalf("batch RV %q: %v", b.ResourceVersion, err)
	}
	if b.Kind == deltafifo.KindReplaceEnd {
		m.popped[safe] = true
	}
	for _, rv := range m.events {
		if rv <= safe && !m.popped[rv] {
			m.fatalf("%s batch has safe RV %d but event %d is still queued", b.Kind, safe, rv)
		}
	}
	if safe > m.rv {
		m.fatalf("safe RV %d is ahead of the last pushed RV %d", safe, m.rv)
	}
	if safe < m.delivered {
		m.fatalf("safe RV went back from %d to %d", m.delivered, safe)
	}
	m.delivered = safe
}

// TestSafeResourceVersionProperty pushes random interleavings of adds,
// updates, deletes, bookmarks, resyncs, relists and synced markers, pops
// batches of random sizes, and checks at every pop that every event whose
// resourceVersion is not newer than the batch's safe resourceVersion has
// been popped (invariant 1), that each event is popped once and in order
// for its key, and that the safe resourceVersion reaches the last pushed
// one once the queue drains.
func TestSafeResourceVersionProperty(t *testing.T) {
	ctx := context.Background()
	keys := []string{"a", "b", "c", "d", "e", "f"}
	seeds, steps := 300, 400
	if testing.Short() {
		seeds = 50
	}
	for seed := uint64(1); seed <= uint64(seeds); seed++ {
		r := rand.New(rand.NewPCG(seed, 0))
		m := &rvModel{t: t, seed: seed, popped: map[int]bool{}, exists: map[string]bool{}, lastOf: map[string]int{}}
		q, err := deltafifo.New(deltafifo.Options{
			Capacity:     1 << 20,
			KnownObjects: &known{pods: []*corev1.Pod{testkit.Pod("a", "0"), testkit.Pod("z", "0")}},
		})
		if err != nil {
			t.Fatal(err)
		}
		popRandom := func() {
			b, err := q.Pop(ctx, 1+r.IntN(4))
			if err != nil {
				m.fatalf("Pop: %v", err)
			}
			m.checkPopped(b)
		}
		for range steps {
			switch n := r.IntN(100); {
			case n < 45: // a watch event
				k := keys[r.IntN(len(keys))]
				rv := m.next()
				if r.IntN(20) == 0 { // an object without a resourceVersion
					rv, m.rv = "", m.rv-1
				} else {
					m.events = append(m.events, m.rv)
				}
				switch {
				case !m.exists[k]:
					err = q.Add(ctx, testkit.Pod(k, rv))
					m.exists[k] = true
				case r.IntN(3) == 0:
					err = q.Delete(ctx, testkit.Pod(k, rv))
					m.exists[k] = false
				default:
					err = q.Update(ctx, testkit.Pod(k, rv))
				}
			case n < 55:
				err = q.Bookmark(ctx, m.next())
			case n < 58:
				err = q.Resync(ctx)
			case n < 60:
				err = q.MarkSynced(ctx)
			case n < 64: // a relist, sometimes aborted
				must(t, q.BeginReplace(ctx))
				for range r.IntN(4) {
					page := []interface{}{}
					for range 1 + r.IntN(3) {
						page = append(page, testkit.Pod(keys[r.IntN(len(keys))], strconv.Itoa(r.IntN(m.rv+1))))
					}
					must(t, q.ReplacePage(ctx, page))
					if r.IntN(3) == 0 && deltafifo.Segments(q) > 0 {
						popRandom()
					}
				}
				if r.IntN(4) == 0 {
					err = q.AbortReplace()
				} else {
					err = q.EndReplace(ctx, m.next())
					m.events = append(m.events, m.rv)
				}
			default:
				if deltafifo.Segments(q) > 0 {
					popRandom()
				}
			}
			if err != nil {
				m.fatalf("push: %v", err)
			}
		}
		q.Close()
		for deltafifo.Segments(q) > 0 {
			popRandom()
		}
		for _, rv := range m.events {
			if !m.popped[rv] {
				m.fatalf("event %d never popped", rv)
			}
		}
		if m.delivered != m.rv {
			m.fatalf("drained queue delivered safe RV %d, want the last pushed %d", m.delivered, m.rv)
		}
	}
}
