package reflector

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/utils/clock"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/warmcache/warmcache/internal/fakesource"
	"github.com/warmcache/warmcache/internal/testkit"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

var podGVK = corev1.SchemeGroupVersion.WithKind("Pod")

func podL(name, v string) *corev1.Pod {
	p := testkit.Pod(name, "")
	p.Labels = map[string]string{"v": v}
	return p
}

// noJitter is the default backoff without jitter, so tests can predict
// each wait.
func noJitter() *wait.Backoff {
	b := DefaultBackoff()
	b.Jitter = 0
	return &b
}

// notifyClock is a fake clock that reports the duration of every timer
// created on it, so a test steps it exactly when the reflector waits.
type notifyClock struct {
	*testingclock.FakeClock
	timers chan time.Duration
}

func newClock() *notifyClock {
	return &notifyClock{FakeClock: testingclock.NewFakeClock(time.Unix(10000, 0)), timers: make(chan time.Duration, 100)}
}

func (c *notifyClock) NewTimer(d time.Duration) clock.Timer {
	t := c.FakeClock.NewTimer(d)
	c.timers <- d
	return t
}

// nextTimer waits for the reflector to create a timer and returns its
// duration.
func (c *notifyClock) nextTimer(t *testing.T) time.Duration {
	t.Helper()
	select {
	case d := <-c.timers:
		return d
	case <-time.After(testkit.Timeout()):
		t.Fatalf("the reflector created no timer within %v", testkit.Timeout())
	}
	return 0
}

// catchUpQuiet is the client-side bound of a catch-up watch that the
// reflector arms on its clock (the watch's timeout plus quietGrace).
const catchUpQuiet = DefaultCatchUpTimeout + quietGrace

// noBackoff fails the test if a timer other than allowed ones was
// created; it takes the allowed ones created so far.
func (c *notifyClock) noBackoff(t *testing.T, allowed ...time.Duration) {
	t.Helper()
	for {
		select {
		case d := <-c.timers:
			if !slices.Contains(allowed, d) {
				t.Fatalf("unexpected backoff of %v", d)
			}
		default:
			return
		}
	}
}

// noTimer fails the test if a timer was created.
func (c *notifyClock) noTimer(t *testing.T) {
	t.Helper()
	select {
	case d := <-c.timers:
		t.Fatalf("unexpected backoff of %v", d)
	default:
	}
}

// recorder is a Sink that records every call as a string, applies the
// stream to an in-memory model of the store, and checks the Sink
// protocol. hook, when set, runs first and may block or fail the call.
type recorder struct {
	hook func(ctx context.Context, call string) error

	mu     sync.Mutex
	calls  []string
	notify chan struct{}
	// The model: committed items by key with their RVs, the RV, the open
	// replace's staged items (nil when none) and protocol violations.
	items      map[string]string
	rv         int64
	staged     map[string]string
	synced     bool
	violations []string
	// strict makes a BeginReplace while a replace is open a violation, as
	// deltafifo.Queue refuses it; use it with abortingRecorder, whose
	// AbortReplace the reflector must call first.
	strict bool
}

func newRecorder() *recorder {
	return &recorder{notify: make(chan struct{}), items: map[string]string{}}
}

func describeObj(obj interface{}) (key, name, rv string) {
	acc, err := meta.Accessor(obj)
	if err != nil {
		return "?", "?", "?"
	}
	return acc.GetNamespace() + "/" + acc.GetName(), acc.GetName(), acc.GetResourceVersion()
}

func (s *recorder) record(ctx context.Context, call string, apply func()) error {
	if s.hook != nil {
		if err := s.hook(ctx, call); err != nil {
			return err
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, call)
	apply()
	close(s.notify)
	s.notify = make(chan struct{})
	return nil
}

func (s *recorder) violate(format string, args ...interface{}) {
	s.violations = append(s.violations, fmt.Sprintf(format, args...))
}

// advance moves the model's RV forward, recording a violation if a live
// event goes back in time.
func (s *recorder) advance(call, rv string) {
	n, err := strconv.ParseInt(rv, 10, 64)
	if err != nil {
		s.violate("%s: bad RV %q", call, rv)
		return
	}
	if n < s.rv {
		s.violate("%s: RV %d after %d", call, n, s.rv)
	}
	s.rv = n
}

func (s *recorder) live(ctx context.Context, verb string, obj interface{}, del bool) error {
	key, name, rv := describeObj(obj)
	call := verb + " " + name + "@" + rv
	return s.record(ctx, call, func() {
		if s.staged != nil {
			s.violate("%s while a replace is open", call)
		}
		s.advance(call, rv)
		if del {
			delete(s.items, key)
		} else {
			s.items[key] = rv
		}
	})
}

func (s *recorder) Add(ctx context.Context, obj interface{}) error {
	return s.live(ctx, "Add", obj, false)
}

func (s *recorder) Update(ctx context.Context, obj interface{}) error {
	return s.live(ctx, "Update", obj, false)
}

func (s *recorder) Delete(ctx context.Context, obj interface{}) error {
	return s.live(ctx, "Delete", obj, true)
}

func (s *recorder) Bookmark(ctx context.Context, rv string) error {
	call := "Bookmark " + rv
	return s.record(ctx, call, func() {
		if s.staged != nil {
			s.violate("%s while a replace is open", call)
		}
		s.advance(call, rv)
	})
}

func (s *recorder) BeginReplace(ctx context.Context) error {
	return s.record(ctx, "BeginReplace", func() {
		if s.strict && s.staged != nil {
			s.violate("BeginReplace while a replace is open")
		}
		s.staged = map[string]string{}
	})
}

func (s *recorder) ReplacePage(ctx context.Context, objs []interface{}) error {
	var names []string
	for _, o := range objs {
		_, name, _ := describeObj(o)
		names = append(names, name)
	}
	call := "ReplacePage " + strings.Join(names, ",")
	return s.record(ctx, call, func() {
		if s.staged == nil {
			s.violate("%s without BeginReplace", call)
			return
		}
		for _, o := range objs {
			key, _, rv := describeObj(o)
			s.staged[key] = rv
		}
	})
}

func (s *recorder) EndReplace(ctx context.Context, rv string) error {
	call := "EndReplace " + rv
	return s.record(ctx, call, func() {
		if s.staged == nil {
			s.violate("%s without BeginReplace", call)
			return
		}
		s.items, s.staged = s.staged, nil
		n, err := strconv.ParseInt(rv, 10, 64)
		if err != nil {
			s.violate("%s: bad RV", call)
		}
		s.rv = n
	})
}

func (s *recorder) MarkSynced(ctx context.Context) error {
	return s.record(ctx, "MarkSynced", func() {
		if s.staged != nil {
			s.violate("MarkSynced while a replace is open")
		}
		if s.synced {
			s.violate("MarkSynced twice")
		}
		s.synced = true
	})
}

// snapshot returns the calls so far.
func (s *recorder) snapshot() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.calls...)
}

// waitFor waits until cond holds for the calls recorded so far and returns
// them. cond runs with the recorder locked (it must not call the
// recorder), so that what it checks and the calls returned are one
// moment's.
func (s *recorder) waitFor(t *testing.T, what string, cond func(calls []string) bool) []string {
	t.Helper()
	return s.waitLocked(t, what, func() bool { return cond(s.calls) })
}

// waitLocked waits until cond, evaluated with s.mu held after every
// recorded call, holds, and returns a copy of the calls taken in the same
// critical section.
func (s *recorder) waitLocked(t *testing.T, what string, cond func() bool) []string {
	t.Helper()
	deadline := time.After(testkit.Timeout())
	for {
		s.mu.Lock()
		done := cond()
		calls := append([]string(nil), s.calls...)
		ch := s.notify
		s.mu.Unlock()
		if done {
			return calls
		}
		select {
		case <-ch:
		case <-deadline:
			t.Fatalf("timed out waiting for %s; sink calls:\n%s", what, strings.Join(calls, "\n"))
		}
	}
}

// waitCall waits until the last call recorded is want.
func (s *recorder) waitCall(t *testing.T, want string) []string {
	t.Helper()
	return s.waitFor(t, want, func(calls []string) bool { return len(calls) > 0 && calls[len(calls)-1] == want })
}

// checkModel fails the test on protocol violations or if the model
// differs from the source's pods.
func (s *recorder) checkModel(t *testing.T, src *fakesource.Source) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.violations) > 0 {
		t.Fatalf("Sink protocol violations:\n%s", strings.Join(s.violations, "\n"))
	}
	if diff := modelDiff(s.items, src); diff != "" {
		t.Fatalf("model differs from the source: %s", diff)
	}
}

// modelDiff describes how items differ from the source's pods.
func modelDiff(items map[string]string, src *fakesource.Source) string {
	want := map[string]string{}
	for _, o := range src.Objects(podGVK) {
		key, _, rv := describeObj(o)
		want[key] = rv
	}
	var diffs []string
	for k, rv := range want {
		if items[k] != rv {
			diffs = append(diffs, fmt.Sprintf("%s: got %q want %q", k, items[k], rv))
		}
	}
	for k, rv := range items {
		if _, ok := want[k]; !ok {
			diffs = append(diffs, fmt.Sprintf("%s: got %q, not in source", k, rv))
		}
	}
	sort.Strings(diffs)
	return strings.Join(diffs, "; ")
}

// waitConverged waits until the model equals src with no relist staged
// and returns the calls recorded at that moment.
func (s *recorder) waitConverged(t *testing.T, src *fakesource.Source) []string {
	t.Helper()
	return s.waitLocked(t, "the model to equal the source", func() bool {
		return s.staged == nil && modelDiff(s.items, src) == ""
	})
}

// count counts calls starting with prefix.
func count(calls []string, prefix string) int {
	n := 0
	for _, c := range calls {
		if strings.HasPrefix(c, prefix) {
			n++
		}
	}
	return n
}

// harness runs a Reflector against a fake source.
type harness struct {
	src  *fakesource.Source
	sink *recorder
	clk  *notifyClock
	r    *Reflector
	stop func()
}

// run starts a reflector on the pods of src; Cleanup stops it and fails
// the test if Run does not return promptly.
func run(t *testing.T, src *fakesource.Source, sink *recorder, opts Options) *harness {
	t.Helper()
	return runSink(t, src, sink, sink, opts)
}

// runSink is run with another Sink wrapping the recorder (abortingRecorder).
func runSink(t *testing.T, src *fakesource.Source, sink *recorder, s Sink, opts Options) *harness {
	t.Helper()
	h := &harness{src: src, sink: sink, clk: newClock()}
	if opts.Clock == nil {
		opts.Clock = h.clk
	}
	if opts.Backoff == nil {
		opts.Backoff = noJitter()
	}
	if opts.Logger == nil {
		logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.Verbosity(4)))
		opts.Logger = &logger
	}
	r, err := New(src.Endpoint(podGVK, ""), &corev1.Pod{}, s, opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	h.r = r
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.Run(ctx)
	}()
	var once sync.Once
	h.stop = func() {
		once.Do(func() {
			cancel()
			select {
			case <-done:
			case <-time.After(testkit.Timeout()):
				t.Errorf("Run did not return within %v of cancellation", testkit.Timeout())
			}
		})
	}
	t.Cleanup(h.stop)
	return h
}

// stoppedRV stops Run and returns LastSyncResourceVersion. The reflector
// records an event's RV once the Sink accepted the event (client-go's
// reflector sets it after its store's Add returns, and does not
// synchronise it with the store's consumer), so a test that saw a call
// reach the Sink can read the RV of that call only once Run has returned.
func (h *harness) stoppedRV() string {
	h.stop()
	return h.r.LastSyncResourceVersion()
}

// newSource returns a fake source with opts holding pods ns/<name>.
func newSource(t *testing.T, opts fakesource.Options, names ...string) *fakesource.Source {
	t.Helper()
	return fakesource.NewForTest(t, opts, testkit.Pods(names...)...)
}

func mustAdd(t *testing.T, src *fakesource.Source, p *corev1.Pod) string {
	t.Helper()
	rv, err := src.Add(p)
	if err != nil {
		t.Fatal(err)
	}
	return rv
}

func mustUpdate(t *testing.T, src *fakesource.Source, p *corev1.Pod) string {
	t.Helper()
	rv, err := src.Update(p)
	if err != nil {
		t.Fatal(err)
	}
	return rv
}

func mustDelete(t *testing.T, src *fakesource.Source, p *corev1.Pod) string {
	t.Helper()
	rv, err := src.Delete(p)
	if err != nil {
		t.Fatal(err)
	}
	return rv
}

// requests returns the source's requests of one verb.
func requests(src *fakesource.Source, verb string) []fakesource.Request {
	var out []fakesource.Request
	for _, r := range src.Requests() {
		if r.Verb == verb {
			out = append(out, r)
		}
	}
	return out
}

// countingMetrics counts Metrics calls.
type countingMetrics struct {
	mu                                               sync.Mutex
	lists, watches, watchLists, relists, resumes, ex int
}

func (m *countingMetrics) ListRequested() { m.mu.Lock(); m.lists++; m.mu.Unlock() }
func (m *countingMetrics) WatchRequested(wl bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.watches++
	if wl {
		m.watchLists++
	}
}
func (m *countingMetrics) RelistStarted() { m.mu.Lock(); m.relists++; m.mu.Unlock() }
func (m *countingMetrics) Resumed()       { m.mu.Lock(); m.resumes++; m.mu.Unlock() }
func (m *countingMetrics) Expired()       { m.mu.Lock(); m.ex++; m.mu.Unlock() }

func (m *countingMetrics) get() (lists, watches, watchLists, relists, resumes, expired int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.lists, m.watches, m.watchLists, m.relists, m.resumes, m.ex
}

// seed fills the model as if the store held the source's current pods
// at its current RV. It sends no request.
func (s *recorder) seed(src *fakesource.Source) {
	objs := src.Objects(podGVK)
	rv := src.ResourceVersion()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, o := range objs {
		key, _, orv := describeObj(o)
		s.items[key] = orv
	}
	s.rv, _ = strconv.ParseInt(rv, 10, 64)
}
