package apiproc

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/warmcache/warmcache/benchmarks/internal/genserver"
	"github.com/warmcache/warmcache/internal/podgen"
	"github.com/warmcache/warmcache/internal/testkit"
)

func TestMain(m *testing.M) {
	MaybeServe()
	goleak.VerifyTestMain(m)
}

const testPods = 30

func startChild(t *testing.T, server string) (*Process, *kubernetes.Clientset) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Timeout())
	defer cancel()
	p, err := Start(ctx, Options{Pods: testPods, Server: server})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	cs, err := kubernetes.NewForConfig(p.Config("application/vnd.kubernetes.protobuf"))
	if err != nil {
		t.Fatal(err)
	}
	return p, cs
}

func TestChildServesChurnsAndCompacts(t *testing.T) {
	for _, server := range Servers {
		t.Run(server, func(t *testing.T) { testChildServesChurnsAndCompacts(t, server) })
	}
}

func testChildServesChurnsAndCompacts(t *testing.T, server string) {
	p, cs := startChild(t, server)
	ctx := context.Background()
	list, err := cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != testPods {
		t.Fatalf("listed %d pods, want %d", len(list.Items), testPods)
	}
	w, err := cs.CoreV1().Pods("").Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	const updates = 45 // more than the pods: some are updated twice
	res, err := p.Churn(ctx, updates, 7, 0)
	if err != nil {
		t.Fatal(err)
	}
	first, _ := strconv.Atoi(res.FirstRV)
	last, _ := strconv.Atoi(res.LastRV)
	if last-first != updates-1 || res.Seconds <= 0 {
		t.Fatalf("churn result %+v for %d updates", res, updates)
	}
	if err := p.Open(ctx); err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for k := range updates {
		ev := testkit.Recv(t, w)
		pod, ok := ev.Object.(*corev1.Pod)
		if ev.Type != watch.Modified || !ok {
			t.Fatalf("event %d: %s %T, want MODIFIED pod", k, ev.Type, ev.Object)
		}
		if pod.ResourceVersion != strconv.Itoa(first+k) || pod.Annotations[GenerationAnnotation] != "7" {
			t.Fatalf("event %d: RV %s generation %q", k, pod.ResourceVersion, pod.Annotations[GenerationAnnotation])
		}
		seen[pod.Name]++
	}
	// Every pod is updated once before any is updated again.
	for name, n := range seen {
		if n < 1 || n > 2 {
			t.Errorf("%s updated %d times", name, n)
		}
	}
	if len(seen) != testPods {
		t.Errorf("%d distinct pods updated, want all %d", len(seen), testPods)
	}

	st, err := p.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.ResourceVersion != res.LastRV || st.Lists != 1 || st.OpenWatches != 1 {
		t.Errorf("stats %+v", st)
	}
	// A watch from within the history resumes; once it is compacted,
	// the watch expires.
	if err := p.Compact(ctx, strconv.Itoa(first)); err != nil {
		t.Fatal(err)
	}
	w2, err := cs.CoreV1().Pods("").Watch(ctx, metav1.ListOptions{ResourceVersion: res.FirstRV})
	if err != nil {
		t.Fatal(err)
	}
	defer w2.Stop()
	if ev := testkit.Recv(t, w2); ev.Type != watch.Modified || ev.Object.(*corev1.Pod).ResourceVersion != strconv.Itoa(first+1) {
		t.Fatalf("watch from the first update: %s %v", ev.Type, ev.Object)
	}
	if err := p.Compact(ctx, ""); err != nil {
		t.Fatal(err)
	}
	if err := expired(t, cs, res.FirstRV); err != nil {
		t.Error(err)
	}
}

func TestChildChurnsHotSet(t *testing.T) {
	for _, server := range Servers {
		t.Run(server, func(t *testing.T) { testChildChurnsHotSet(t, server) })
	}
}

// testChildChurnsHotSet checks that both servers churn a hot set the same
// way: cycling over its pods, in the order of genserver.NewChurnOrder.
func testChildChurnsHotSet(t *testing.T, server string) {
	p, cs := startChild(t, server)
	ctx := context.Background()
	st, err := p.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	w, err := cs.CoreV1().Pods("").Watch(ctx, metav1.ListOptions{ResourceVersion: st.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	const hot, updates = 4, 3*4 + 1
	res, err := p.Churn(ctx, updates, 3, hot)
	if err != nil {
		t.Fatal(err)
	}
	first, _ := strconv.Atoi(res.FirstRV)
	last, _ := strconv.Atoi(res.LastRV)
	if last-first != updates-1 {
		t.Fatalf("churn result %+v for %d updates", res, updates)
	}
	if err := p.Open(ctx); err != nil {
		t.Fatal(err)
	}
	order, err := genserver.NewChurnOrder(testPods, hot)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for k := range updates {
		ev := testkit.Recv(t, w)
		pod, ok := ev.Object.(*corev1.Pod)
		if ev.Type != watch.Modified || !ok {
			t.Fatalf("event %d: %s %T, want MODIFIED pod", k, ev.Type, ev.Object)
		}
		ns, name := podgen.Key(order.Index(k))
		if pod.Namespace != ns || pod.Name != name || pod.ResourceVersion != strconv.Itoa(first+k) || pod.Annotations[GenerationAnnotation] != "3" {
			t.Fatalf("event %d: %s/%s RV %s generation %q, want %s/%s", k, pod.Namespace, pod.Name, pod.ResourceVersion, pod.Annotations[GenerationAnnotation], ns, name)
		}
		seen[pod.Name]++
	}
	if len(seen) != hot {
		t.Errorf("%d distinct pods updated, want the hot set's %d", len(seen), hot)
	}
	for name, n := range seen {
		if n < updates/hot || n > updates/hot+1 {
			t.Errorf("%s updated %d times, want %d or %d", name, n, updates/hot, updates/hot+1)
		}
	}
}

// expired checks that a watch from rv is expired: the server refuses it or
// sends an ERROR event with 410.
func expired(t *testing.T, cs *kubernetes.Clientset, rv string) error {
	t.Helper()
	w, err := cs.CoreV1().Pods("").Watch(context.Background(), metav1.ListOptions{ResourceVersion: rv})
	if err != nil {
		if apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
			return nil
		}
		return fmt.Errorf("watch from compacted RV %s: %w", rv, err)
	}
	defer w.Stop()
	ev := testkit.Recv(t, w)
	if ev.Type != watch.Error || !apierrors.IsResourceExpired(apierrors.FromObject(ev.Object)) {
		return fmt.Errorf("watch from compacted RV %s: %s %v, want 410", rv, ev.Type, ev.Object)
	}
	return nil
}

func TestControlErrors(t *testing.T) {
	for _, server := range Servers {
		t.Run(server, func(t *testing.T) {
			p, _ := startChild(t, server)
			ctx := context.Background()
			if _, err := p.Churn(ctx, 0, 1, 0); !errors.Is(err, ErrServer) {
				t.Errorf("Churn of 0 updates: %v, want ErrServer", err)
			}
			// A hot set must be of 0 to every pod; the refusal names
			// the server and the hot set.
			for _, hot := range []int{-1, testPods + 1} {
				_, err := p.Churn(ctx, 1, 1, hot)
				if !errors.Is(err, ErrServer) || !strings.Contains(err.Error(), "400") || !strings.Contains(err.Error(), server+": ") || !strings.Contains(err.Error(), "hot set") {
					t.Errorf("Churn with a hot set of %d: %v, want ErrServer, 400 from %s naming the hot set", hot, err, server)
				}
			}
			if _, err := p.Churn(ctx, 1, 1, testPods); err != nil {
				t.Errorf("Churn with a hot set of every pod: %v", err)
			}
			if err := p.Open(ctx); err != nil {
				t.Fatal(err)
			}
			if err := p.Compact(ctx, "not-a-number"); !errors.Is(err, ErrServer) {
				t.Errorf("Compact(not-a-number): %v, want ErrServer", err)
			}
		})
	}
}

func TestStartErrors(t *testing.T) {
	if _, err := Start(context.Background(), Options{}); !errors.Is(err, ErrServer) {
		t.Errorf("Start without pods: %v, want ErrServer", err)
	}
	if _, err := Start(context.Background(), Options{Pods: 1, Server: "etcd"}); !errors.Is(err, ErrServer) {
		t.Errorf("Start of an unknown server: %v, want ErrServer", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	// A million pods cannot be ready before the cancelled context wins;
	// the child stops generating them when Start gives up.
	if _, err := Start(ctx, Options{Pods: 1_000_000}); !errors.Is(err, context.Canceled) {
		t.Errorf("Start with a cancelled context: %v, want context.Canceled", err)
	}
}

func TestGateHoldsBackWatchWrites(t *testing.T) {
	g := &gate{}
	h := g.wrap(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, err := w.Write([]byte("x"))
		if err != nil {
			w.Header().Set("X-Write-Error", err.Error())
		}
	}))
	serve := func(target string, ctx context.Context) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequestWithContext(ctx, http.MethodGet, target, nil))
		return rec
	}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()

	g.Close()
	// A held-back write waits for the gate; the request's end releases it
	// with an error, so nothing was written.
	if rec := serve("/api/v1/pods?watch=true", cancelled); rec.Body.Len() != 0 || rec.Header().Get("X-Write-Error") == "" {
		t.Errorf("watch write through a closed gate: body %q", rec.Body.String())
	}
	// Lists are never held back.
	if rec := serve("/api/v1/pods", cancelled); rec.Body.String() != "x" {
		t.Errorf("list through a closed gate: body %q", rec.Body.String())
	}
	g.Open()
	if rec := serve("/api/v1/pods?watch=1", cancelled); rec.Body.String() != "x" {
		t.Errorf("watch write through an open gate: body %q", rec.Body.String())
	}
	g.Open() // opening an open gate does nothing
	g.Close()
	g.Close()
	g.Open()
	if rec := serve("/api/v1/pods?watch=1", context.Background()); rec.Body.String() != "x" {
		t.Errorf("watch write after close, close, open: body %q", rec.Body.String())
	}
}

func TestMaybeServeReturnsOutsideAChild(t *testing.T) {
	MaybeServe() // must return: this process is no child (TestMain served otherwise)
}
