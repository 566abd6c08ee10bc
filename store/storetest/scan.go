package storetest

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"

	"github.com/warmcache/warmcache/internal/podgen"
	"github.com/warmcache/warmcache/store"
)

var errStop = errors.New("storetest: stop here")

func testScanKeyOrder(t *testing.T, h harness) {
	s := h.open(t, nil)
	if err := s.Scan(context.Background(), func(key string, _ interface{}) error {
		t.Errorf("Scan of an empty store called fn for %q", key)
		return nil
	}); err != nil {
		t.Errorf("Scan of an empty store: %v", err)
	}
	pods := podgen.Pods(300)
	shuffled := slices.Clone(pods)
	rand.New(rand.NewPCG(1, 2)).Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	mustAdd(t, s, shuffled...)
	mustAdd(t, s, mkPod("", "cluster-scoped", "1"))

	keys, objs := scanAll(t, "Scan", s.Scan)
	want := append(keysOfPods(t, pods), "cluster-scoped")
	slices.Sort(want)
	if !slices.Equal(keys, want) {
		t.Fatalf("Scan keys are not every key in order (got %d keys, want %d)", len(keys), len(want))
	}
	byKey := map[string]*corev1.Pod{"cluster-scoped": mkPod("", "cluster-scoped", "1")}
	for _, p := range pods {
		byKey[keyOf(t, p)] = p
	}
	for i, k := range keys {
		if !apiequality.Semantic.DeepEqual(objs[i], byKey[k]) {
			t.Errorf("Scan passed a different object for %s", k)
		}
	}
}

func testScanStopsAtFirstError(t *testing.T, h harness) {
	s := h.open(t, nil, podgen.Pods(10)...)
	calls := 0
	err := s.Scan(context.Background(), func(string, interface{}) error {
		calls++
		if calls == 3 {
			return errStop
		}
		return nil
	})
	if !errors.Is(err, errStop) {
		t.Errorf("Scan = %v, want fn's error", err)
	}
	if calls != 3 {
		t.Errorf("fn was called %d times, want 3", calls)
	}
}

func testScanCancelledContext(t *testing.T, h harness) {
	s := h.open(t, nil, podgen.Pods(10)...)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	noop := func(string, interface{}) error { return nil }
	if err := s.Scan(ctx, noop); !errors.Is(err, context.Canceled) {
		t.Errorf("Scan with a cancelled context = %v, want context.Canceled", err)
	}
	if err := s.ScanIndex(ctx, indexNamespace, podgen.Pod(0).Namespace, noop); !errors.Is(err, context.Canceled) {
		t.Errorf("ScanIndex with a cancelled context = %v, want context.Canceled", err)
	}
	// Cancelling during the scan stops it.
	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	calls := 0
	err := s.Scan(ctx, func(string, interface{}) error {
		calls++
		if calls == 2 {
			cancel()
		}
		return nil
	})
	if !errors.Is(err, context.Canceled) || calls == 10 {
		t.Errorf("Scan cancelled by fn = %v after %d calls, want context.Canceled before the end", err, calls)
	}
}

func testScanIndex(t *testing.T, h harness) {
	s, pods := usersFixture(t, h)
	ctx := context.Background()
	cases := []struct {
		index, value string
		want         []*corev1.Pod
	}{
		{indexUsers, "ernie", []*corev1.Pod{pods["one"], pods["tre"]}},
		{indexUsers, "bert", []*corev1.Pod{pods["one"], pods["two"]}},
		{indexUsers, "nobody", nil},
		{indexNamespace, "other", []*corev1.Pod{pods["none"], pods["tre"]}},
	}
	for _, tc := range cases {
		t.Run(tc.index+"="+tc.value, func(t *testing.T) {
			keys, objs := scanAll(t, "ScanIndex", byIndex(s, tc.index, tc.value))
			want := keysOfPods(t, tc.want)
			slices.Sort(want)
			if !slices.Equal(keys, want) {
				t.Errorf("ScanIndex keys = %q, want %q in order", keys, want)
			}
			assertObjects(t, "ScanIndex", objs, tc.want...)
		})
	}
	noop := func(string, interface{}) error { return nil }
	if err := s.ScanIndex(ctx, "nope", "x", noop); !errors.Is(err, store.ErrIndexNotFound) {
		t.Errorf("ScanIndex of an unknown index = %v, want ErrIndexNotFound", err)
	}
	calls := 0
	err := s.ScanIndex(ctx, indexUsers, "ernie", func(string, interface{}) error { calls++; return errStop })
	if !errors.Is(err, errStop) || calls != 1 {
		t.Errorf("ScanIndex with a failing fn = %v after %d calls, want fn's error after 1", err, calls)
	}
}

func testResourceVersionOf(t *testing.T, h harness) {
	s := h.open(t, nil)
	a := podgen.Pod(7)
	mustAdd(t, s, a)
	check := func(when, key, wantRV string, wantExists bool) {
		t.Helper()
		rv, exists, err := s.ResourceVersionOf(key)
		if err != nil || exists != wantExists || rv != wantRV {
			t.Errorf("%s: ResourceVersionOf(%q) = %q, %v, %v; want %q, %v", when, key, rv, exists, err, wantRV, wantExists)
		}
	}
	key := keyOf(t, a)
	check("after Add", key, a.ResourceVersion, true)
	check("absent", "ns/absent", "", false)
	if err := s.Update(withRV(a, "12345")); err != nil {
		t.Fatal(err)
	}
	check("after Update", key, "12345", true)
	mustAdd(t, s, mkPod("ns", "no-rv", ""))
	check("object without an rv", "ns/no-rv", "", true)
	if err := s.Delete(a); err != nil {
		t.Fatal(err)
	}
	check("after Delete", key, "", false)
}
