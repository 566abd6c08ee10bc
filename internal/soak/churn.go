package soak

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/flowcontrol"

	"github.com/warmcache/warmcache/internal/demo"
	"github.com/warmcache/warmcache/internal/soakctl"
)

// Churn operations.
const (
	opCreate = "create"
	opUpdate = "update"
	opDelete = "delete"
)

// churnTimeout bounds one request of the churn.
const churnTimeout = 10 * time.Second

// churn creates, updates and deletes pods, configmaps and widgets in the
// soak's namespaces at a target rate, keeping about target objects of
// each. Its workers run between resume and pause; pause returns once
// every request in flight has ended, so that the server is quiet while
// the soak compares the controller with it.
type churn struct {
	cs         kubernetes.Interface
	dyn        dynamic.Interface
	namespaces []string
	target     int
	workers    int
	limiter    flowcontrol.RateLimiter
	seed       uint64

	// gate: a worker holds it for reading during a request; pause takes
	// it for writing.
	gate sync.RWMutex
	wg   sync.WaitGroup

	// mu guards the fields below.
	mu      sync.Mutex
	present map[string]map[string]int // resource -> key -> object number
	next    int                       // the next object number
	ok      map[string]map[string]int // resource -> op -> requests that succeeded
	failed  map[string]int            // reason -> requests that failed
	active  time.Duration             // time spent running, before since
	since   time.Time                 // zero while paused
	paused  bool
	cancel  context.CancelFunc
}

func newChurn(cs kubernetes.Interface, dyn dynamic.Interface, namespaces []string, target, workers int, rate float64, seed uint64) *churn {
	ch := &churn{cs: cs, dyn: dyn, namespaces: namespaces, target: target, workers: workers, seed: seed,
		limiter: flowcontrol.NewTokenBucketRateLimiter(float32(rate), max(1, int(rate/10))),
		present: map[string]map[string]int{}, ok: map[string]map[string]int{}, failed: map[string]int{}, paused: true}
	for _, r := range soakctl.Resources {
		ch.present[r.Name] = map[string]int{}
		ch.ok[r.Name] = map[string]int{}
	}
	return ch
}

// populate creates target objects of each resource, with workers
// concurrent requests and no rate limit; the churn's counts start after
// them.
func (ch *churn) populate(ctx context.Context) error {
	if _, err := ch.createMany(ctx, ch.target); err != nil {
		return err
	}
	ch.mu.Lock()
	defer ch.mu.Unlock()
	for r := range ch.ok {
		ch.ok[r] = map[string]int{}
	}
	return nil
}

// grow creates n more objects of each resource at once, beside the
// churn: the cluster grows. It returns how many it created.
func (ch *churn) grow(ctx context.Context, n int) (int, error) {
	return ch.createMany(ctx, n)
}

// createMany creates n objects of each resource with workers concurrent
// requests and no rate limit, and returns how many it created before the
// first error.
func (ch *churn) createMany(ctx context.Context, n int) (int, error) {
	type job struct {
		resource string
		n        int
	}
	jobs := make(chan job)
	errs := make(chan error, ch.workers)
	var created atomic.Int64
	var wg sync.WaitGroup
	for range ch.workers {
		wg.Go(func() {
			for j := range jobs {
				if err := ch.create(ctx, j.resource, j.n); err != nil {
					errs <- err
					return
				}
				created.Add(1)
			}
		})
	}
	var err error
feed:
	for range n {
		for _, r := range soakctl.Resources {
			select {
			case jobs <- job{r.Name, ch.number()}:
			case err = <-errs:
				break feed
			}
		}
	}
	close(jobs)
	wg.Wait()
	close(errs)
	if err == nil {
		err = <-errs
	}
	return int(created.Load()), err
}

func (ch *churn) number() int {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	ch.next++
	return ch.next
}

// resume starts the workers.
func (ch *churn) resume(ctx context.Context) {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	if !ch.paused {
		return
	}
	ch.paused = false
	ch.since = time.Now()
	wctx, cancel := context.WithCancel(ctx)
	ch.cancel = cancel
	for w := range ch.workers {
		rng := rand.New(rand.NewPCG(ch.seed, uint64(ch.next)<<8|uint64(w)))
		ch.wg.Go(func() { ch.work(wctx, rng) })
	}
}

// pause stops the workers and waits until their requests have ended.
func (ch *churn) pause() {
	ch.mu.Lock()
	if ch.paused {
		ch.mu.Unlock()
		return
	}
	ch.paused = true
	ch.active += time.Since(ch.since)
	ch.since = time.Time{}
	cancel := ch.cancel
	ch.mu.Unlock()
	// Stop new requests, let those in flight end.
	ch.gate.Lock()
	cancel()
	ch.gate.Unlock()
	ch.wg.Wait()
}

func (ch *churn) work(ctx context.Context, rng *rand.Rand) {
	for {
		if err := ch.limiter.Wait(ctx); err != nil {
			return
		}
		ch.gate.RLock()
		if ctx.Err() != nil {
			ch.gate.RUnlock()
			return
		}
		ch.step(ctx, rng)
		ch.gate.RUnlock()
	}
}

// step makes one request: a create when a resource is short of its
// target, a delete when it is over, otherwise any of the three.
func (ch *churn) step(ctx context.Context, rng *rand.Rand) {
	r := soakctl.Resources[rng.IntN(len(soakctl.Resources))].Name
	ch.mu.Lock()
	present := ch.present[r]
	n := len(present)
	var key string
	var number int
	if n > 0 {
		// One of the first keys in the map's order, which is random
		// (the churn's timing is not reproducible anyway: only the
		// fault schedule is the seed's).
		keys := make([]string, 0, 8)
		for k := range present {
			keys = append(keys, k)
			if len(keys) == cap(keys) {
				break
			}
		}
		sort.Strings(keys)
		key = keys[rng.IntN(len(keys))]
		number = present[key]
	}
	ch.mu.Unlock()
	op := opUpdate
	switch x := rng.Float64(); {
	case n == 0 || (n < ch.target*9/10 && x < 0.5):
		op = opCreate
	case n > ch.target*11/10 && x < 0.5:
		op = opDelete
	case x < 1.0/3:
		op = opCreate
	case x < 2.0/3:
		op = opDelete
	}
	rctx, cancel := context.WithTimeout(ctx, churnTimeout)
	defer cancel()
	var err error
	switch op {
	case opCreate:
		err = ch.create(rctx, r, ch.number())
	case opUpdate:
		err = ch.update(rctx, r, key, rng.Uint32())
	case opDelete:
		err = ch.delete(rctx, r, key, number)
	}
	if err != nil && ctx.Err() == nil {
		ch.count(r, op, err)
	}
}

// count records a failed request by its reason.
func (ch *churn) count(resource, op string, err error) {
	reason := string(apierrors.ReasonForError(err))
	if reason == "" {
		reason = "transport"
	}
	ch.mu.Lock()
	defer ch.mu.Unlock()
	ch.failed[op+" "+reason]++
}

func (ch *churn) succeeded(resource, op, key string, number int, present bool) {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	ch.ok[resource][op]++
	if present {
		ch.present[resource][key] = number
	} else {
		delete(ch.present[resource], key)
	}
}

func (ch *churn) forget(resource, key string) {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	delete(ch.present[resource], key)
}

func (ch *churn) namespace(number int) string { return ch.namespaces[number%len(ch.namespaces)] }

func widgetName(number int) string    { return fmt.Sprintf("w-%07d", number) }
func configMapName(number int) string { return fmt.Sprintf("cm-%07d", number) }

func (ch *churn) create(ctx context.Context, resource string, number int) error {
	ns := ch.namespace(number)
	var name string
	var err error
	switch resource {
	case "pods":
		p := demo.NewPod(number, ns)
		name = p.Name
		_, err = ch.cs.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
	case "configmaps":
		name = configMapName(number)
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{"soak": "true"}},
			Data: map[string]string{"n": fmt.Sprint(number), "payload": strings.Repeat("x", 512)}}
		_, err = ch.cs.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{})
	default:
		name = widgetName(number)
		w := &unstructured.Unstructured{Object: map[string]interface{}{
			"apiVersion": soakctl.WidgetGVR.GroupVersion().String(),
			"kind":       "Widget",
			"metadata":   map[string]interface{}{"name": name, "namespace": ns},
			"spec":       map[string]interface{}{"size": int64(number), "color": "blue", "parts": []interface{}{"a", "b"}},
		}}
		_, err = ch.dyn.Resource(soakctl.WidgetGVR).Namespace(ns).Create(ctx, w, metav1.CreateOptions{})
	}
	switch {
	case err == nil, apierrors.IsAlreadyExists(err):
		ch.succeeded(resource, opCreate, ns+"/"+name, number, true)
		return nil
	default:
		return fmt.Errorf("soak: create %s %s/%s: %w", resource, ns, name, err)
	}
}

func (ch *churn) update(ctx context.Context, resource, key string, v uint32) error {
	ns, name, _ := strings.Cut(key, "/")
	var err error
	switch resource {
	case "pods":
		patch := fmt.Sprintf(`{"metadata":{"labels":{"churn":"%d"}}}`, v)
		_, err = ch.cs.CoreV1().Pods(ns).Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	case "configmaps":
		patch := fmt.Sprintf(`{"data":{"churn":"%d"}}`, v)
		_, err = ch.cs.CoreV1().ConfigMaps(ns).Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	default:
		patch := fmt.Sprintf(`{"spec":{"size":%d}}`, v)
		_, err = ch.dyn.Resource(soakctl.WidgetGVR).Namespace(ns).Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	}
	switch {
	case err == nil:
		ch.mu.Lock()
		ch.ok[resource][opUpdate]++
		ch.mu.Unlock()
		return nil
	case apierrors.IsNotFound(err):
		ch.forget(resource, key)
		return nil
	default:
		return fmt.Errorf("soak: update %s %s: %w", resource, key, err)
	}
}

func (ch *churn) delete(ctx context.Context, resource, key string, number int) error {
	ns, name, _ := strings.Cut(key, "/")
	var err error
	switch resource {
	case "pods":
		err = ch.cs.CoreV1().Pods(ns).Delete(ctx, name, *metav1.NewDeleteOptions(0))
	case "configmaps":
		err = ch.cs.CoreV1().ConfigMaps(ns).Delete(ctx, name, metav1.DeleteOptions{})
	default:
		err = ch.dyn.Resource(soakctl.WidgetGVR).Namespace(ns).Delete(ctx, name, metav1.DeleteOptions{})
	}
	if err == nil || apierrors.IsNotFound(err) {
		ch.succeeded(resource, opDelete, key, number, false)
		return nil
	}
	return fmt.Errorf("soak: delete %s %s: %w", resource, key, err)
}

// churnStats is what the churn did.
type churnStats struct {
	// OK counts the requests that succeeded, by resource and operation.
	OK map[string]map[string]int
	// Failed counts the failed requests by operation and reason.
	Failed map[string]int
	// Active is how long the workers ran (pauses excluded).
	Active time.Duration
}

// Total returns the requests that succeeded.
func (s churnStats) Total() int {
	n := 0
	for _, ops := range s.OK {
		for _, c := range ops {
			n += c
		}
	}
	return n
}

// Rate returns the requests that succeeded per second of Active.
func (s churnStats) Rate() float64 {
	if s.Active <= 0 {
		return 0
	}
	return float64(s.Total()) / s.Active.Seconds()
}

func (ch *churn) stats() churnStats {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	s := churnStats{OK: map[string]map[string]int{}, Failed: map[string]int{}, Active: ch.active}
	if !ch.paused {
		s.Active += time.Since(ch.since)
	}
	for r, ops := range ch.ok {
		s.OK[r] = map[string]int{}
		for op, n := range ops {
			s.OK[r][op] = n
		}
	}
	for k, n := range ch.failed {
		s.Failed[k] = n
	}
	return s
}
