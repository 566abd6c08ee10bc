package genserver

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/warmcache/warmcache/benchmarks/internal/measure"
	"github.com/warmcache/warmcache/internal/podgen"
	"github.com/warmcache/warmcache/internal/testkit"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const testPods = 700

func start(t *testing.T, contentType string) (*Server, *Client, *kubernetes.Clientset) {
	t.Helper()
	s, err := New(Pods(testPods))
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s)
	t.Cleanup(hs.Close)
	cfg := Config(hs.URL)
	cfg.ContentType = contentType
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(hs.CloseClientConnections)
	return s, &Client{URL: hs.URL, HTTP: hs.Client()}, cs
}

func TestListPagesInKeyOrder(t *testing.T) {
	for _, ct := range []string{"application/vnd.kubernetes.protobuf", "application/json"} {
		t.Run(ct, func(t *testing.T) {
			_, _, cs := start(t, ct)
			ctx := context.Background()
			var names []string
			opts := metav1.ListOptions{Limit: 300}
			for {
				l, err := cs.CoreV1().Pods("").List(ctx, opts)
				if err != nil {
					t.Fatal(err)
				}
				for _, p := range l.Items {
					names = append(names, p.Namespace+"/"+p.Name)
					if p.ResourceVersion == "" || len(p.Spec.Containers) != 2 {
						t.Fatalf("pod %s/%s: RV %q, %d containers", p.Namespace, p.Name, p.ResourceVersion, len(p.Spec.Containers))
					}
				}
				if l.Continue == "" {
					break
				}
				opts.Continue = l.Continue
			}
			if len(names) != testPods {
				t.Fatalf("listed %d pods, want %d", len(names), testPods)
			}
			for i := 1; i < len(names); i++ {
				if names[i-1] >= names[i] {
					t.Fatalf("not in key order at %d: %s, %s", i, names[i-1], names[i])
				}
			}
		})
	}
}

func TestWatchListThenChangesThenRestart(t *testing.T) {
	s, c, cs := start(t, "application/vnd.kubernetes.protobuf")
	ctx := context.Background()
	w, err := cs.CoreV1().Pods("").Watch(ctx, metav1.ListOptions{
		SendInitialEvents: ptr.To(true), ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, AllowWatchBookmarks: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	seen := map[string]bool{}
	for range testPods {
		ev := testkit.Recv(t, w)
		p, ok := ev.Object.(*corev1.Pod)
		if ev.Type != watch.Added || !ok {
			t.Fatalf("initial event %s %T", ev.Type, ev.Object)
		}
		seen[p.Name] = true
	}
	if len(seen) != testPods {
		t.Fatalf("%d distinct pods", len(seen))
	}
	ev := testkit.Recv(t, w)
	bm, _ := ev.Object.(*corev1.Pod)
	if ev.Type != watch.Bookmark || bm == nil || bm.Annotations[metav1.InitialEventsAnnotationKey] != "true" || bm.ResourceVersion != strconv.FormatInt(s.Stats().ResourceVersion, 10) {
		t.Fatalf("after the initial events: %s %+v", ev.Type, ev.Object)
	}

	// Changes are held back until Open.
	res, err := c.Churn(ctx, "pods", 3, 9, 0)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-w.ResultChan():
		t.Fatalf("event %s while held back", ev.Type)
	default:
	}
	if err := c.Open(ctx); err != nil {
		t.Fatal(err)
	}
	for k := range 3 {
		ev := testkit.Recv(t, w)
		p := ev.Object.(*corev1.Pod)
		if ev.Type != watch.Modified || p.Annotations[GenerationAnnotation] != "9" || p.ResourceVersion != strconv.FormatInt(res.FirstRV+int64(k), 10) {
			t.Fatalf("change %d: %s RV %s annotations %v", k, ev.Type, p.ResourceVersion, p.Annotations)
		}
		// The changed pod is a podgen pod with its new state.
		want := podgen.Pod(0)
		if len(p.Spec.Containers) != len(want.Spec.Containers) {
			t.Fatalf("change %d is no podgen pod", k)
		}
	}

	// A watch from the old RV resumes; after Restart it is expired, and
	// the open watch ends.
	w2, err := cs.CoreV1().Pods("").Watch(ctx, metav1.ListOptions{ResourceVersion: strconv.FormatInt(res.FirstRV, 10)})
	if err != nil {
		t.Fatal(err)
	}
	defer w2.Stop()
	if ev := testkit.Recv(t, w2); ev.Type != watch.Modified || ev.Object.(*corev1.Pod).ResourceVersion != strconv.FormatInt(res.FirstRV+1, 10) {
		t.Fatalf("resumed watch: %s %v", ev.Type, ev.Object)
	}
	if err := c.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case _, ok := <-w.ResultChan():
		if ok {
			t.Fatal("an event after the restart")
		}
	case <-time.After(testkit.Timeout()):
		t.Fatal("the watch did not end at the restart")
	}
	w3, err := cs.CoreV1().Pods("").Watch(ctx, metav1.ListOptions{ResourceVersion: strconv.FormatInt(res.LastRV, 10)})
	if err != nil {
		t.Fatal(err)
	}
	defer w3.Stop()
	ev = testkit.Recv(t, w3)
	if ev.Type != watch.Error || !apierrors.IsResourceExpired(apierrors.FromObject(ev.Object)) {
		t.Fatalf("watch from a compacted RV: %s %v", ev.Type, ev.Object)
	}
	st, err := c.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.WatchLists != 1 || st.Watches != 3 {
		t.Errorf("stats %+v", st)
	}
}

func TestInvalid(t *testing.T) {
	if _, err := New(); !errors.Is(err, ErrInvalid) {
		t.Errorf("New(): %v", err)
	}
	if _, err := New(Pods(0)); !errors.Is(err, ErrInvalid) {
		t.Errorf("New(Pods(0)): %v", err)
	}
	if _, err := New(Pods(1), Pods(2)); !errors.Is(err, ErrInvalid) {
		t.Errorf("a resource twice: %v", err)
	}
	_, c, _ := start(t, "")
	if _, err := c.Churn(context.Background(), "pods", 0, 1, 0); !errors.Is(err, ErrControl) {
		t.Errorf("churn of nothing: %v", err)
	}
	if _, err := c.Churn(context.Background(), "widgets", 1, 1, 0); !errors.Is(err, ErrControl) {
		t.Errorf("churn of an unknown resource: %v", err)
	}
}

func TestCompact(t *testing.T) {
	s, _, cs := start(t, "application/vnd.kubernetes.protobuf")
	ctx := context.Background()
	res, err := s.Churn("pods", 5, 2, 0)
	if err != nil {
		t.Fatal(err)
	}
	s.Open()
	for _, rv := range []int64{res.LastRV + 1, res.FirstRV - 10} {
		if err := s.Compact(rv); !errors.Is(err, ErrInvalid) {
			t.Errorf("Compact(%d) of history %d..%d: %v, want ErrInvalid", rv, res.FirstRV, res.LastRV, err)
		}
	}
	if err := s.Compact(res.FirstRV + 1); err != nil {
		t.Fatal(err)
	}
	// From the compaction on, the history is whole; before, it expired.
	w, err := cs.CoreV1().Pods("").Watch(ctx, metav1.ListOptions{ResourceVersion: strconv.FormatInt(res.FirstRV+1, 10)})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if ev := testkit.Recv(t, w); ev.Type != watch.Modified || ev.Object.(*corev1.Pod).ResourceVersion != strconv.FormatInt(res.FirstRV+2, 10) {
		t.Fatalf("watch from the compaction: %s %v", ev.Type, ev.Object)
	}
	w2, err := cs.CoreV1().Pods("").Watch(ctx, metav1.ListOptions{ResourceVersion: strconv.FormatInt(res.FirstRV, 10)})
	if err != nil {
		t.Fatal(err)
	}
	defer w2.Stop()
	if ev := testkit.Recv(t, w2); ev.Type != watch.Error || !apierrors.IsResourceExpired(apierrors.FromObject(ev.Object)) {
		t.Fatalf("watch from before the compaction: %s %v", ev.Type, ev.Object)
	}
	if err := s.Compact(0); err != nil {
		t.Fatal(err)
	}
	if err := s.Compact(res.LastRV - 1); !errors.Is(err, ErrInvalid) {
		t.Errorf("compaction backwards: %v, want ErrInvalid", err)
	}
}

func TestChurnOrder(t *testing.T) {
	for _, count := range []int{1, 2, 50, testPods, 1009} {
		stride := measure.SpreadStride(count)
		uniform, err := NewChurnOrder(count, 0)
		if err != nil {
			t.Fatal(err)
		}
		// Hot set 0 is today's order: every object once, then again.
		for k := range 2*count + 3 {
			if got, want := uniform.Index(k), int(int64(k)*int64(stride)%int64(count)); got != want {
				t.Fatalf("%d objects, no hot set: change %d to %d, want %d", count, k, got, want)
			}
		}
		for _, hot := range []int{1, 7, 60, count / 3, count} {
			if hot < 1 || hot > count {
				continue
			}
			o, err := NewChurnOrder(count, hot)
			if err != nil {
				t.Fatal(err)
			}
			seen := map[int]bool{}
			namespaces := map[string]bool{}
			for k := range 3*hot + 2 {
				i := o.Index(k)
				if i < 0 || i >= count {
					t.Fatalf("%d objects, hot set %d: change %d to object %d", count, hot, k, i)
				}
				if k < hot {
					if seen[i] {
						t.Fatalf("%d objects, hot set %d: change %d repeats object %d", count, hot, k, i)
					}
					// The hot set's first objects are the uniform
					// order's: spread the same way.
					if u := uniform.Index(k); i != u {
						t.Fatalf("%d objects, hot set %d: change %d to %d, the uniform order's %d", count, hot, k, i, u)
					}
				} else if want := o.Index(k - hot); i != want {
					t.Fatalf("%d objects, hot set %d: change %d to %d, want %d as change %d", count, hot, k, i, want, k-hot)
				}
				seen[i] = true
				ns, _ := podgen.Key(i)
				namespaces[ns] = true
			}
			if len(seen) != hot {
				t.Errorf("%d objects, hot set %d: %d distinct objects changed", count, hot, len(seen))
			}
			// Spread: where the namespaces divide the objects
			// evenly, the hot objects fall in distinct namespaces,
			// as many as there are (the stride is coprime with them).
			if want := min(hot, podgen.Namespaces); count%podgen.Namespaces == 0 && len(namespaces) != want {
				t.Errorf("%d objects, hot set %d: %d namespaces, want %d", count, hot, len(namespaces), want)
			}
		}
	}
	for _, c := range [][2]int{{10, -1}, {10, 11}, {0, 0}, {-1, 0}} {
		if _, err := NewChurnOrder(c[0], c[1]); !errors.Is(err, ErrInvalid) {
			t.Errorf("NewChurnOrder(%d, %d): %v, want ErrInvalid", c[0], c[1], err)
		}
	}
}

func TestChurnHotSet(t *testing.T) {
	s, c, cs := start(t, "application/vnd.kubernetes.protobuf")
	ctx := context.Background()
	const hot, changes = 60, 3*60 + 7
	// Through the control API: the watch sees changes cycling over the
	// hot set's pods, in the order of NewChurnOrder.
	before := s.Stats().ResourceVersion
	res, err := c.Churn(ctx, "pods", changes, 5, hot)
	if err != nil {
		t.Fatal(err)
	}
	if res.LastRV-res.FirstRV != changes-1 {
		t.Fatalf("churn result %+v for %d changes", res, changes)
	}
	if err := c.Open(ctx); err != nil {
		t.Fatal(err)
	}
	w, err := cs.CoreV1().Pods("").Watch(ctx, metav1.ListOptions{ResourceVersion: strconv.FormatInt(before, 10)})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	order, err := NewChurnOrder(testPods, hot)
	if err != nil {
		t.Fatal(err)
	}
	distinct := map[string]int{}
	for k := range changes {
		ev := testkit.Recv(t, w)
		p := ev.Object.(*corev1.Pod)
		ns, name := podgen.Key(order.Index(k))
		if ev.Type != watch.Modified || p.Namespace != ns || p.Name != name || p.Annotations[GenerationAnnotation] != "5" {
			t.Fatalf("change %d: %s %s/%s generation %q, want MODIFIED %s/%s", k, ev.Type, p.Namespace, p.Name, p.Annotations[GenerationAnnotation], ns, name)
		}
		distinct[p.Namespace+"/"+p.Name]++
	}
	if len(distinct) != hot {
		t.Errorf("%d distinct pods changed, want the hot set's %d", len(distinct), hot)
	}
	for key, n := range distinct {
		if n < changes/hot || n > changes/hot+1 {
			t.Errorf("%s changed %d times, want %d or %d", key, n, changes/hot, changes/hot+1)
		}
	}

	// The server's state: the hot set's pods changed, no other.
	r := s.res[0]
	s.mu.Lock()
	changed := 0
	for _, g := range r.gen {
		if g != 0 {
			changed++
		}
	}
	s.mu.Unlock()
	if changed != hot {
		t.Errorf("%d pods at a generation, want %d", changed, hot)
	}

	// A hot set of every pod is the uniform churn; above it, or
	// negative, is invalid.
	if _, err := s.Churn("pods", 1, 6, testPods); err != nil {
		t.Errorf("hot set of every pod: %v", err)
	}
	s.Open()
	for _, h := range []int{-1, testPods + 1} {
		if _, err := s.Churn("pods", 1, 6, h); !errors.Is(err, ErrInvalid) {
			t.Errorf("Churn with a hot set of %d: %v, want ErrInvalid", h, err)
		}
		if _, err := c.Churn(ctx, "pods", 1, 6, h); !errors.Is(err, ErrControl) || !strings.Contains(err.Error(), "hot set") {
			t.Errorf("control churn with a hot set of %d: %v, want ErrControl naming the hot set", h, err)
		}
	}
	if err := Control(ctx, c.HTTP, c.URL, "churn", url.Values{"changes": {"1"}, "gen": {"6"}, "hot": {"many"}}, nil); err == nil || !strings.Contains(err.Error(), "400") {
		t.Errorf("control churn with hot=many: %v, want 400", err)
	}
}

// TestPreTimeoutBookmark: as kube-apiserver's watch cache, a watch that
// allows bookmarks gets one at the current resourceVersion 2s before its
// timeout, after the changes before it, without the initial-events-end
// annotation; none under 3s or without bookmarks allowed.
func TestPreTimeoutBookmark(t *testing.T) {
	s, _, cs := start(t, "application/vnd.kubernetes.protobuf")
	ctx := context.Background()
	res, err := s.Churn("pods", 3, 2, 0)
	if err != nil {
		t.Fatal(err)
	}
	s.Open()
	from := strconv.FormatInt(res.FirstRV-1, 10)
	for _, tc := range []struct {
		timeout   int64
		bookmarks bool
		want      bool
	}{{3, true, true}, {2, true, false}, {3, false, false}} {
		t.Run(fmt.Sprintf("timeout=%ds,bookmarks=%v", tc.timeout, tc.bookmarks), func(t *testing.T) {
			w, err := cs.CoreV1().Pods("").Watch(ctx, metav1.ListOptions{ResourceVersion: from, AllowWatchBookmarks: tc.bookmarks, TimeoutSeconds: &tc.timeout})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Stop()
			for range 3 {
				if ev := testkit.Recv(t, w); ev.Type != watch.Modified {
					t.Fatalf("got %s, want the three changes first", ev.Type)
				}
			}
			ev, ok := <-w.ResultChan()
			switch {
			case !tc.want && ok:
				t.Fatalf("got %s, want the watch closed at its timeout without a bookmark", ev.Type)
			case tc.want && (!ok || ev.Type != watch.Bookmark):
				t.Fatalf("got %s (open %v), want a bookmark", ev.Type, ok)
			case tc.want:
				p := ev.Object.(*corev1.Pod)
				if p.ResourceVersion != strconv.FormatInt(res.LastRV, 10) || len(p.Annotations) != 0 {
					t.Fatalf("bookmark %+v, want one at %d without annotations", p.ObjectMeta, res.LastRV)
				}
			}
		})
	}
}
