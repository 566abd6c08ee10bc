package reflector

// This file ports the list and relist tests of client-go's
// tools/cache/reflector_test.go at v0.36.3: ListAndWatch with and without
// WatchList, list and watch errors, pagination, and the resourceVersion
// of relists (after a watch ends, after 410 Gone, after an expired
// continue token, after TooLargeResourceVersion). Adapted (see
// clientgo_helpers_test.go): a relist is provoked by an expired watch
// instead of a second ListAndWatch call; the requests are compared
// without TimeoutSeconds. Intended differences, in the package doc:
//
//   - every LIST is paginated with Options.ListPageSize: client-go does not
//     paginate a list at a resourceVersion other than "" and "0" unless an
//     earlier list was paginated (so that the watch cache serves it);
//     ours asks for it with resourceVersionMatch=NotOlderThan and a limit,
//     which servers with KEP-4988 serve from the watch cache, and never
//     holds more than one page;
//   - after an expired continue token ours lists the most recent state
//     (RV "") with pages; client-go lists again at the last RV without
//     pagination.

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/warmcache/warmcache/internal/testkit"
)

const notOlder = metav1.ResourceVersionMatchNotOlderThan

// checkRequests compares the requests lw received with want.
func checkRequests(t *testing.T, lw *cgLW, want []request) {
	t.Helper()
	if got := lw.got(); !reflect.DeepEqual(got, want) {
		t.Errorf("requests:\n%+v\nwant:\n%+v", got, want)
	}
}

func TestReflectorListAndWatch(t *testing.T) {
	events := []watch.Event{
		{Type: watch.Modified, Object: testkit.Pod("foo", "2")},
		{Type: watch.Added, Object: testkit.Pod("bar", "3")},
		{Type: watch.Added, Object: testkit.Pod("baz", "4")},
		{Type: watch.Added, Object: testkit.Pod("qux", "5")},
		{Type: watch.Added, Object: testkit.Pod("zoo", "6")},
	}
	table := []struct {
		name         string
		useWatchList bool
		list         runtime.Object
		watchEvents  []watch.Event
		requests     []request
		calls        []string
	}{{
		name:         "UseWatchList enabled",
		useWatchList: true,
		watchEvents: append([]watch.Event{
			{Type: watch.Added, Object: testkit.Pod("foo", "1")},
			{Type: watch.Bookmark, Object: endBookmark("1")},
		}, events...),
		requests: []request{watchListReq("")},
		calls: []string{"BeginReplace", "ReplacePage foo", "EndReplace 1",
			"Update foo@2", "Add bar@3", "Add baz@4", "Add qux@5", "Add zoo@6"},
	}, {
		name:        "UseWatchList disabled",
		list:        mkList("1", testkit.Pod("foo", "1")),
		watchEvents: events,
		requests:    []request{listReq("0", 500, "", ""), watchReq("1")},
		calls: []string{"BeginReplace", "ReplacePage foo", "EndReplace 1",
			"Update foo@2", "Add bar@3", "Add baz@4", "Add qux@5", "Add zoo@6"},
	}}
	for _, tc := range table {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			watcherCh := make(chan *watch.FakeWatcher, 1)
			lw := newLW(
				func(context.Context, metav1.ListOptions) (runtime.Object, error) {
					if tc.list == nil {
						return nil, fmt.Errorf("ListerWatcher.List called")
					}
					return tc.list, nil
				},
				func(context.Context, metav1.ListOptions) (watch.Interface, error) {
					w := watch.NewFake()
					select {
					case watcherCh <- w:
					default:
						return nil, fmt.Errorf("ListerWatcher.Watch called twice")
					}
					return w, nil
				})
			policy := WatchListOff
			if tc.useWatchList {
				policy = WatchListAuto
			}
			s := newRecorder()
			r := newCG(t, lw, s, nil, Options{UseWatchList: policy})
			done := make(chan struct{})
			go func() {
				defer close(done)
				r.Run(ctx)
			}()
			fw := <-watcherCh
			for _, e := range tc.watchEvents {
				fw.Action(e.Type, e.Object)
			}
			s.waitCall(t, tc.calls[len(tc.calls)-1])
			cancel()
			<-done

			if got := s.snapshot(); !equalStrings(got, tc.calls) {
				t.Errorf("Sink calls %v, want %v", got, tc.calls)
			}
			s.checkProtocol(t)
			want := map[string]string{"foo": "2", "bar": "3", "baz": "4", "qux": "5", "zoo": "6"}
			if got := s.itemsByName(); !equalMaps(got, want) {
				t.Errorf("store %v, want %v", got, want)
			}
			checkRequests(t, lw, tc.requests)
		})
	}
}

func TestReflectorListAndWatchWithErrors(t *testing.T) {
	table := []struct {
		list     *corev1.PodList
		listErr  error
		events   []watch.Event
		watchErr error
	}{
		{
			list: mkList("1"),
			events: []watch.Event{
				{Type: watch.Added, Object: testkit.Pod("foo", "2")},
				{Type: watch.Added, Object: testkit.Pod("bar", "3")},
			},
		}, {
			list: mkList("3", testkit.Pod("foo", "2"), testkit.Pod("bar", "3")),
			events: []watch.Event{
				{Type: watch.Deleted, Object: testkit.Pod("foo", "4")},
				{Type: watch.Added, Object: testkit.Pod("qux", "5")},
			},
		}, {
			listErr: fmt.Errorf("a list error"),
		}, {
			list:     mkList("5", testkit.Pod("bar", "3"), testkit.Pod("qux", "5")),
			watchErr: fmt.Errorf("a watch error"),
		}, {
			list: mkList("5", testkit.Pod("bar", "3"), testkit.Pod("qux", "5")),
			events: []watch.Event{
				{Type: watch.Added, Object: testkit.Pod("baz", "6")},
			},
		}, {
			list: mkList("6", testkit.Pod("bar", "3"), testkit.Pod("qux", "5"), testkit.Pod("baz", "6")),
		},
	}

	// One Sink across the reflectors, as client-go's test keeps one store
	// across its ListAndWatch calls.
	s := newRecorder()
	for line, item := range table {
		if item.list != nil {
			// Test that the list is what currently exists in the store.
			want := map[string]string{}
			for _, p := range item.list.Items {
				want[p.Name] = p.ResourceVersion
			}
			if got := s.itemsByName(); !equalMaps(got, want) {
				t.Errorf("%v: store %v, want %v", line, got, want)
			}
		}
		ctx, cancel := context.WithCancel(context.Background())
		var mu sync.Mutex
		var handled []error
		watches := 0
		lw := newLW(
			func(context.Context, metav1.ListOptions) (runtime.Object, error) {
				if item.listErr != nil {
					return nil, item.listErr
				}
				return item.list, nil
			},
			func(context.Context, metav1.ListOptions) (watch.Interface, error) {
				if item.watchErr != nil {
					return nil, item.watchErr
				}
				if watches++; watches > 1 || len(item.events) == 0 {
					// client-go's ListAndWatch returns here.
					cancel()
					return nil, context.Canceled
				}
				// The events, then the end of the watch.
				fw := watch.NewFakeWithChanSize(len(item.events), false)
				for _, e := range item.events {
					fw.Action(e.Type, e.Object)
				}
				fw.Stop()
				return fw, nil
			})
		lw.watchListOff = true
		r := newCG(t, lw, s, nil, Options{
			WatchErrorHandler: func(_ context.Context, _ *cache.Reflector, err error) {
				mu.Lock()
				handled = append(handled, err)
				mu.Unlock()
				cancel()
			},
		})
		runToEnd(t, r, ctx, cancel)
		mu.Lock()
		switch {
		case item.listErr != nil:
			if len(handled) != 1 || !errors.Is(handled[0], item.listErr) {
				t.Errorf("%v: handled %v, want the list error", line, handled)
			}
		case item.watchErr != nil:
			if len(handled) != 1 || !errors.Is(handled[0], item.watchErr) {
				t.Errorf("%v: handled %v, want the watch error", line, handled)
			}
		default:
			if len(handled) != 0 {
				t.Errorf("%v: unexpected errors %v", line, handled)
			}
		}
		mu.Unlock()
	}
	s.checkProtocol(t)
}

// pagedPods serves 10 pods in pages of 4 by continue token, at
// resourceVersion "10".
func pagedPods(t *testing.T, options metav1.ListOptions) (runtime.Object, error) {
	pods := make([]corev1.Pod, 10)
	for i := 0; i < 10; i++ {
		pods[i] = *testkit.Pod(fmt.Sprintf("pod-%d", i), fmt.Sprintf("%d", i))
	}
	switch options.Continue {
	case "":
		return &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "10", Continue: "C1"}, Items: pods[0:4]}, nil
	case "C1":
		return &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "10", Continue: "C2"}, Items: pods[4:8]}, nil
	case "C2":
		return &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "10"}, Items: pods[8:10]}, nil
	}
	t.Errorf("Unrecognized continue: %s", options.Continue)
	return nil, errUnscripted
}

// TestReflectorWatchListPageSize checks a paginated list at a
// resourceVersion (an incomplete stored state stands for client-go's
// setLastSyncResourceVersion) in pages of ListPageSize.
func TestReflectorWatchPageSize(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	lw := newLW(
		func(_ context.Context, options metav1.ListOptions) (runtime.Object, error) {
			if options.Limit != 4 {
				t.Errorf("Expected list Limit of 4 but got %d", options.Limit)
			}
			return pagedPods(t, options)
		},
		func(context.Context, metav1.ListOptions) (watch.Interface, error) {
			// Stop once the reflector begins watching.
			cancel()
			return watch.NewFake(), nil
		})
	lw.watchListOff = true
	s := newRecorder()
	r := newCG(t, lw, s, nil, Options{ListPageSize: 4, ResumeFrom: func() (string, bool) { return "10", false }})
	runToEnd(t, r, ctx, cancel)

	if got := s.itemsByName(); len(got) != 10 {
		t.Errorf("Expected 10 results, got %d", len(got))
	}
	want := []string{"BeginReplace", "ReplacePage pod-0,pod-1,pod-2,pod-3", "ReplacePage pod-4,pod-5,pod-6,pod-7", "ReplacePage pod-8,pod-9", "EndReplace 10"}
	if got := s.snapshot(); !equalStrings(got, want) {
		t.Errorf("Sink calls %v, want %v", got, want)
	}
	checkRequests(t, lw, []request{
		listReq("10", 4, notOlder, ""), listReq("", 4, "", "C1"), listReq("", 4, "", "C2"), watchReq("10"),
	})
}

// TestReflectorNotPaginatingNotConsistentReads: client-go lists at a
// resourceVersion other than "0" without a limit, so that the watch cache
// serves it. Ours asks for pages not older than that resourceVersion
// (package doc); a server that answers with one page is fine.
func TestReflectorNotPaginatingNotConsistentReads(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	lw := newLW(
		func(_ context.Context, options metav1.ListOptions) (runtime.Object, error) {
			pods := make([]corev1.Pod, 10)
			for i := 0; i < 10; i++ {
				pods[i] = *testkit.Pod(fmt.Sprintf("pod-%d", i), fmt.Sprintf("%d", i))
			}
			return &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "10"}, Items: pods}, nil
		},
		func(context.Context, metav1.ListOptions) (watch.Interface, error) {
			cancel()
			return watch.NewFake(), nil
		})
	lw.watchListOff = true
	s := newRecorder()
	r := newCG(t, lw, s, nil, Options{ResumeFrom: func() (string, bool) { return "10", false }})
	runToEnd(t, r, ctx, cancel)

	if got := s.itemsByName(); len(got) != 10 {
		t.Errorf("Expected 10 results, got %d", len(got))
	}
	checkRequests(t, lw, []request{listReq("10", DefaultListPageSize, notOlder, ""), watchReq("10")})
}

// TestReflectorPaginatingNonConsistentReadsIfWatchCacheDisabled checks
// that a relist at the last resourceVersion is paginated like the first
// list.
func TestReflectorPaginatingNonConsistentReadsIfWatchCacheDisabled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	watches := 0
	lw := newLW(
		func(_ context.Context, options metav1.ListOptions) (runtime.Object, error) {
			// Check that default pager limit is set.
			if options.Limit != 500 {
				t.Errorf("Expected list Limit of 500 but got %d", options.Limit)
			}
			return pagedPods(t, options)
		},
		func(context.Context, metav1.ListOptions) (watch.Interface, error) {
			if watches++; watches == 1 {
				return expiredWatch(), nil // relist
			}
			cancel()
			return watch.NewFake(), nil
		})
	lw.watchListOff = true
	s := newRecorder()
	r := newCG(t, lw, s, nil, Options{})
	runToEnd(t, r, ctx, cancel)

	if got := s.itemsByName(); len(got) != 10 {
		t.Errorf("Expected 10 results, got %d", len(got))
	}
	if n := count(s.snapshot(), "EndReplace 10"); n != 2 {
		t.Errorf("%d relists ended, want 2", n)
	}
	checkRequests(t, lw, []request{
		listReq("0", 500, "", ""), listReq("", 500, "", "C1"), listReq("", 500, "", "C2"), watchReq("10"),
		listReq("10", 500, notOlder, ""), listReq("", 500, "", "C1"), listReq("", 500, "", "C2"), watchReq("10"),
	})
	s.checkProtocol(t)
}

// eightPods returns pods pod-0 to pod-7.
func eightPods() []corev1.Pod {
	pods := make([]corev1.Pod, 8)
	for i := 0; i < 8; i++ {
		pods[i] = *testkit.Pod(fmt.Sprintf("pod-%d", i), fmt.Sprintf("%d", i))
	}
	return pods
}

// relistingLW lists with list and answers its first watches with an
// expired watch (each makes Run relist) and the next one by cancelling.
func relistingLW(t *testing.T, expiredWatches int, cancel context.CancelFunc,
	list func(metav1.ListOptions) (runtime.Object, error)) *cgLW {
	watches := 0
	lw := newLW(
		func(_ context.Context, options metav1.ListOptions) (runtime.Object, error) { return list(options) },
		func(context.Context, metav1.ListOptions) (watch.Interface, error) {
			if watches++; watches <= expiredWatches {
				return expiredWatch(), nil
			}
			cancel()
			return watch.NewFake(), nil
		})
	lw.watchListOff = true
	return lw
}

func listRVs(lw *cgLW) []string {
	var rvs []string
	for _, r := range lw.got() {
		if r.verb == "list" {
			rvs = append(rvs, r.opts.ResourceVersion)
		}
	}
	return rvs
}

// TestReflectorResyncWithResourceVersion ensures that a reflector keeps
// track of the ResourceVersion and sends it in relist requests to prevent
// the reflector from traveling back in time if the relist is to an
// apiserver or etcd that is partitioned and serving older data than the
// reflector has already processed.
func TestReflectorResyncWithResourceVersion(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	lw := relistingLW(t, 1, cancel, func(options metav1.ListOptions) (runtime.Object, error) {
		pods := eightPods()
		switch options.ResourceVersion {
		case "0":
			return &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "10"}, Items: pods[0:4]}, nil
		case "10":
			return &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "11"}, Items: pods[0:8]}, nil
		}
		t.Errorf("Unrecognized ResourceVersion: %s", options.ResourceVersion)
		return nil, errUnscripted
	})
	s := newRecorder()
	r := newCG(t, lw, s, nil, Options{})
	runToEnd(t, r, ctx, cancel)

	want := []string{
		"BeginReplace", "ReplacePage pod-0,pod-1,pod-2,pod-3", "EndReplace 10",
		"BeginReplace", "ReplacePage pod-0,pod-1,pod-2,pod-3,pod-4,pod-5,pod-6,pod-7", "EndReplace 11",
	}
	if got := s.snapshot(); !equalStrings(got, want) {
		t.Errorf("Sink calls %v, want %v", got, want)
	}
	if got, want := listRVs(lw), []string{"0", "10"}; !equalStrings(got, want) {
		t.Errorf("Expected series of list calls with resource versions of %v but got: %v", want, got)
	}
	checkRequests(t, lw, []request{
		listReq("0", 500, "", ""), watchReq("10"), listReq("10", 500, notOlder, ""), watchReq("11"),
	})
}

// TestReflectorExpiredExactResourceVersion tests that a reflector handles
// a 410 to a List at its last resourceVersion (kubernetes 1.16 and
// earlier without the watch cache) by listing the most recent state.
func TestReflectorExpiredExactResourceVersion(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	lw := relistingLW(t, 1, cancel, func(options metav1.ListOptions) (runtime.Object, error) {
		pods := eightPods()
		switch options.ResourceVersion {
		case "0":
			return &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "10"}, Items: pods[0:4]}, nil
		case "10":
			return nil, apierrors.NewResourceExpired("The resourceVersion for the provided watch is too old.")
		case "":
			return &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "11"}, Items: pods[0:8]}, nil
		}
		t.Errorf("Unrecognized ResourceVersion: %s", options.ResourceVersion)
		return nil, errUnscripted
	})
	s := newRecorder()
	r := newCG(t, lw, s, nil, Options{})
	runToEnd(t, r, ctx, cancel)

	if got := s.itemsByName(); len(got) != 8 {
		t.Errorf("Expected 8 results, got %d", len(got))
	}
	if got, want := listRVs(lw), []string{"0", "10", ""}; !equalStrings(got, want) {
		t.Errorf("Expected series of list calls with resource versions of %v but got: %v", want, got)
	}
	s.checkProtocol(t)
}

func TestReflectorFullListIfExpired(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	lw := relistingLW(t, 1, cancel, func(options metav1.ListOptions) (runtime.Object, error) {
		pods := eightPods()
		rvContinueLimit := func(rv, c string, l int64) metav1.ListOptions {
			return metav1.ListOptions{ResourceVersion: rv, Continue: c, Limit: l}
		}
		switch rvContinueLimit(options.ResourceVersion, options.Continue, options.Limit) {
		// initial limited list
		case rvContinueLimit("0", "", 4):
			return &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "10"}, Items: pods[0:4]}, nil
		// first page of the rv=10 list
		case rvContinueLimit("10", "", 4):
			return &corev1.PodList{ListMeta: metav1.ListMeta{Continue: "C1", ResourceVersion: "11"}, Items: pods[0:4]}, nil
		// second page of the above list
		case rvContinueLimit("", "C1", 4):
			return nil, apierrors.NewResourceExpired("The resourceVersion for the provided watch is too old.")
		// ours: the most recent state, paginated (client-go: rv=10
		// unlimited)
		case rvContinueLimit("", "", 4):
			return &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "11"}, Items: pods[0:8]}, nil
		}
		err := fmt.Errorf("unexpected list options: %#v", options)
		t.Error(err)
		return nil, err
	})
	s := newRecorder()
	r := newCG(t, lw, s, nil, Options{ListPageSize: 4})
	runToEnd(t, r, ctx, cancel)

	if got := s.itemsByName(); len(got) != 8 {
		t.Errorf("Expected 8 results, got %d", len(got))
	}
	// client-go: "0", "10", "" (the continue), "10".
	if got, want := listRVs(lw), []string{"0", "10", "", ""}; !equalStrings(got, want) {
		t.Errorf("Expected series of list calls with resource versions of %#v but got: %#v", want, got)
	}
	s.checkProtocol(t)
}

func TestReflectorFullListIfTooLarge(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	version := 30
	lw := relistingLW(t, 3, cancel, func(options metav1.ListOptions) (runtime.Object, error) {
		resourceVersion := fmt.Sprint(version)
		switch options.ResourceVersion {
		// initial list
		case "0":
			return &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "20"}}, nil
		// relist after the initial list
		case "20":
			err := apierrors.NewTimeoutError("too large resource version", 1)
			err.ErrStatus.Details.Causes = []metav1.StatusCause{{Type: metav1.CauseTypeResourceVersionTooLarge}}
			return nil, err
		// relist after the initial list (covers the error format used in api server 1.17.0-1.18.5)
		case "30":
			err := apierrors.NewTimeoutError("too large resource version", 1)
			err.ErrStatus.Details.Causes = []metav1.StatusCause{{Message: "Too large resource version"}}
			return nil, err
		// relist after the initial list (covers the error format used in api server before 1.17.0)
		case "40":
			err := apierrors.NewTimeoutError("Too large resource version", 1)
			return nil, err
		// relist from etcd after "too large" error
		case "":
			version += 10
			return &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: resourceVersion}}, nil
		}
		return nil, fmt.Errorf("unexpected List call: %s", options.ResourceVersion)
	})
	r := newCG(t, lw, newRecorder(), nil, Options{})
	runToEnd(t, r, ctx, cancel)

	expectedRVs := []string{"0", "20", "", "30", "", "40", ""}
	if got := listRVs(lw); !equalStrings(got, expectedRVs) {
		t.Errorf("Expected series of list calls with resource version of %#v but got: %#v", expectedRVs, got)
	}
}

// TestReflectorReplacesStoreOnUnsafeDelete checks that a watch ERROR
// reporting an object unsafe-deleted as corrupt (500) relists, and the
// relist removes the object.
func TestReflectorReplacesStoreOnUnsafeDelete(t *testing.T) {
	preExisting := testkit.Pod("foo-1", "1")
	pods := []*corev1.Pod{preExisting, testkit.Pod("foo-2", "2"), testkit.Pod("foo-3", "3")}
	lastExpectedRV := "5"
	lists := []*corev1.PodList{
		mkList("3", pods...),            // initial list
		mkList(lastExpectedRV, pods...), // re-list due to watch error
	}
	corruptObj := testkit.Pod("foo", "4")
	status := &metav1.Status{
		Status:  metav1.StatusFailure,
		Code:    http.StatusInternalServerError,
		Reason:  metav1.StatusReasonStoreReadError,
		Message: "failed to prepare current and previous objects: corrupt object has been deleted",
	}

	ctx, cancel := context.WithCancel(context.Background())
	var once sync.Once
	lw := newLW(
		func(context.Context, metav1.ListOptions) (runtime.Object, error) {
			if len(lists) == 0 {
				return nil, errUnscripted
			}
			list := lists[0]
			lists = lists[1:]
			return list, nil
		},
		func(context.Context, metav1.ListOptions) (watch.Interface, error) {
			fw := watch.NewFakeWithChanSize(2, false)
			once.Do(func() {
				fw.Add(corruptObj)
				// The object becomes corrupt and is unsafe-deleted; the
				// RV has advanced to 5 in the storage.
				fw.Error(status)
			})
			return fw, nil
		})
	lw.watchListOff = true
	s := newRecorder()
	r := newCG(t, lw, s, nil, Options{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.Run(ctx)
	}()
	calls := s.waitCall(t, "EndReplace "+lastExpectedRV)
	cancel()
	<-done

	want := []string{
		"BeginReplace", "ReplacePage foo-1,foo-2,foo-3", "EndReplace 3", "Add foo@4",
		"BeginReplace", "ReplacePage foo-1,foo-2,foo-3", "EndReplace 5",
	}
	if !equalStrings(calls, want) {
		t.Errorf("Sink calls %v, want %v", calls, want)
	}
	if got, want := s.itemsByName(), map[string]string{"foo-1": "1", "foo-2": "2", "foo-3": "3"}; !equalMaps(got, want) {
		t.Errorf("store %v, want %v", got, want)
	}
	if want, got := lastExpectedRV, r.LastSyncResourceVersion(); want != got {
		t.Errorf("expected LastSyncResourceVersion to be %q, but got: %q", want, got)
	}
	s.checkProtocol(t)
}
