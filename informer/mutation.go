package informer

import (
	"context"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"sync"
	"time"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/diff"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
)

// EnvMutationDetector is the environment variable that turns the mutation
// detector on for every informer (see Options.DetectMutations): any value
// strconv.ParseBool reads as true. It is client-go's switch for its own
// cache mutation detector.
const EnvMutationDetector = "KUBE_CACHE_MUTATION_DETECTOR"

const (
	// mutationCheckPeriod is how often a running informer compares the
	// objects it handed out with their copies.
	mutationCheckPeriod = time.Second
	// mutationRetain is how long copies are kept at least; they are
	// dropped after twice that at most (client-go keeps them as long).
	mutationRetain = 2 * time.Minute
	// mutationCheckBudget is how many objects a periodic check compares
	// at most: client-go compares every copy every second, which on a
	// busy informer (thousands of events a minute, each copy kept two
	// minutes) takes the CPU the pipeline needs. A periodic check
	// compares a share of the watched objects, a different one each
	// time (map order); the check when the informer stops compares them
	// all.
	mutationCheckBudget = 1000
)

// mutationDetector keeps a deep copy of every object the informer hands out
// (to handlers, and from GetStore and GetIndexer) and reports any that no
// longer equals its copy: invariant 6, checked as client-go's
// cache.NewCacheMutationDetector checks it. It is meant for tests: it costs
// a copy of every object handed out. A nil *mutationDetector is off; its
// methods do nothing.
type mutationDetector struct {
	name   string
	clock  clock.WithTicker
	report func(string)

	// mu guards the fields below.
	mu sync.Mutex
	// cur holds the objects handed out since the last rotation, old those
	// of the rotation before, each mapped to its copy. Objects are keyed by
	// identity: they are pointers.
	cur, old map[runtime.Object]runtime.Object
	rotated  time.Time
}

func newMutationDetector(name string, clk clock.WithTicker, report func(string)) *mutationDetector {
	if report == nil {
		report = func(msg string) { panic(msg) }
	}
	return &mutationDetector{
		name: name, clock: clk, report: report,
		cur: map[runtime.Object]runtime.Object{}, old: map[runtime.Object]runtime.Object{},
		rotated: clk.Now(),
	}
}

// watch records a copy of obj (of a tombstone's object) unless it is
// watched already. Objects are keyed by identity; those that are not
// pointers cannot be shared (nor always used as map keys) and are ignored.
func (d *mutationDetector) watch(obj interface{}) {
	if d == nil || obj == nil {
		return
	}
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		d.watch(t.Obj)
		return
	}
	o, ok := obj.(runtime.Object)
	if !ok || reflect.ValueOf(o).Kind() != reflect.Pointer {
		return
	}
	if d.keep(o, nil) {
		return
	}
	// Copy outside the lock: checks and other readers are not held up.
	d.keep(o, o.DeepCopyObject())
}

// keep keeps o watched for another rotation if it is watched
// already and reports true; otherwise it records cp as o's copy, if cp
// is not nil, and reports false. It takes d.mu.
func (d *mutationDetector) keep(o, cp runtime.Object) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok := d.cur[o]; ok {
		return true
	}
	if prev, ok := d.old[o]; ok {
		// Still handed out: keep it for another rotation.
		delete(d.old, o)
		d.cur[o] = prev
		return true
	}
	if cp != nil {
		d.cur[o] = cp
	}
	return false
}

// watchNote watches the objects of a notification.
func (d *mutationDetector) watchNote(n note) {
	if d == nil {
		return
	}
	d.watch(n.old)
	d.watch(n.new)
}

// check compares every watched object with its copy and reports those that
// changed, once each. It drops the copies older than mutationRetain. The
// comparisons run without d.mu held: watch, called for every object the
// informer hands out, only waits for the snapshot of the watched set, so
// a large set slows the check, never the pipeline.
func (d *mutationDetector) check() { d.checkSome(-1) }

// checkSome is check comparing at most budget objects (all when budget
// is negative).
func (d *mutationDetector) checkSome(budget int) {
	if d == nil {
		return
	}
	type pair struct{ obj, cp runtime.Object }
	d.mu.Lock()
	n := len(d.old) + len(d.cur)
	if budget >= 0 && budget < n {
		n = budget
	}
	pairs := make([]pair, 0, n)
	take := func(m map[runtime.Object]runtime.Object, k int) {
		for o, cp := range m {
			if k == 0 {
				return
			}
			pairs = append(pairs, pair{o, cp})
			k--
		}
	}
	// The recent copies and the older ones share the budget; what one
	// set leaves unused goes to the other.
	fromOld := min(len(d.old), n/2)
	take(d.cur, n-fromOld)
	take(d.old, n-len(pairs))
	d.mu.Unlock()

	var changed []string
	var mutated []runtime.Object
	for _, p := range pairs {
		if !apiequality.Semantic.DeepEqual(p.obj, p.cp) {
			changed = append(changed, fmt.Sprintf("%T %s changed after it was handed out (- copy, + now):\n%s", p.obj, describeMeta(p.obj), diff.Diff(p.cp, p.obj)))
			mutated = append(mutated, p.obj)
		}
	}

	d.mu.Lock()
	for _, o := range mutated { // reported once
		delete(d.old, o)
		delete(d.cur, o)
	}
	if now := d.clock.Now(); now.Sub(d.rotated) >= mutationRetain {
		d.old, d.cur, d.rotated = d.cur, map[runtime.Object]runtime.Object{}, now
	}
	d.mu.Unlock()
	if len(changed) == 0 {
		return
	}
	sort.Strings(changed)
	d.report(fmt.Sprintf("cache %s modified: %d object(s) handed out by the informer were mutated (invariant 6)\n%s",
		d.name, len(changed), strings.Join(changed, "\n")))
}

// watched returns the number of objects watched.
func (d *mutationDetector) watched() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.cur) + len(d.old)
}

// run checks every mutationCheckPeriod, within mutationCheckBudget, until
// ctx is done.
func (d *mutationDetector) run(ctx context.Context) {
	t := d.clock.NewTicker(mutationCheckPeriod)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
			d.checkSome(mutationCheckBudget)
		}
	}
}

func describeMeta(obj runtime.Object) string {
	m, err := meta.Accessor(obj)
	if err != nil {
		return "(no metadata)"
	}
	if m.GetNamespace() == "" {
		return m.GetName()
	}
	return m.GetNamespace() + "/" + m.GetName()
}
