package fakesource

import (
	"context"
	"errors"
	"reflect"
	"strconv"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/warmcache/warmcache/internal/testkit"
)

func TestMutations(t *testing.T) {
	s := NewForTest(t, Options{})
	if got := s.ResourceVersion(); got != "1" {
		t.Fatalf("initial RV = %s, want 1", got)
	}
	p := testkit.Pod("a", "")
	if rv := mustAdd(t, s, p); rv != "2" {
		t.Fatalf("Add RV = %s, want 2", rv)
	}
	if p.ResourceVersion != "" {
		t.Fatalf("Add mutated the caller's object: RV %q", p.ResourceVersion)
	}
	if _, err := s.Add(p); !errors.Is(err, ErrAlreadyExists) {
		t.Fatalf("second Add: %v, want ErrAlreadyExists", err)
	}
	if _, err := s.Update(testkit.Pod("b", "")); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Update of absent: %v, want ErrNotFound", err)
	}
	if _, err := s.Delete(testkit.Pod("b", "")); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Delete of absent: %v, want ErrNotFound", err)
	}
	if _, err := s.Add(testkit.Pod("", "")); !errors.Is(err, ErrInvalidObject) {
		t.Fatalf("Add without name: %v, want ErrInvalidObject", err)
	}
	if _, err := s.Add(nil); !errors.Is(err, ErrInvalidObject) {
		t.Fatalf("Add(nil): %v, want ErrInvalidObject", err)
	}
	u := &unstructured.Unstructured{}
	u.SetName("x")
	if _, err := s.Add(u); !errors.Is(err, ErrInvalidObject) {
		t.Fatalf("Add of unstructured without kind: %v, want ErrInvalidObject", err)
	}
	u.SetGroupVersionKind(podGVK)
	if _, err := s.Add(u); !errors.Is(err, ErrInvalidObject) {
		t.Fatalf("Add of unstructured typed kind: %v, want ErrInvalidObject", err)
	}
	if rv := mustUpdate(t, s, testkit.Pod("a", "", testkit.Labels{"v": "2"})); rv != "3" {
		t.Fatalf("Update RV = %s, want 3", rv)
	}
	got, ok := s.Get(podGVK, "ns", "a")
	if !ok || got.(*corev1.Pod).Labels["v"] != "2" || rvOf(t, got) != "3" {
		t.Fatalf("Get after update = %v, %v", got, ok)
	}
	if rv := mustDelete(t, s, testkit.Pod("a", "")); rv != "4" {
		t.Fatalf("Delete RV = %s, want 4", rv)
	}
	if _, ok := s.Get(podGVK, "ns", "a"); ok {
		t.Fatalf("Get after delete found the object")
	}
	if err := s.Compact("99"); !errors.Is(err, ErrInvalidResourceVersion) {
		t.Fatalf("Compact ahead: %v, want ErrInvalidResourceVersion", err)
	}
	if err := s.Compact("x"); !errors.Is(err, ErrInvalidResourceVersion) {
		t.Fatalf("Compact of garbage: %v, want ErrInvalidResourceVersion", err)
	}
}

func TestNewRejectsBadOptions(t *testing.T) {
	for name, opts := range map[string]Options{
		"negative interval": {BookmarkInterval: -1},
		"unknown mode":      {WatchList: WatchListMode(42)},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := New(opts); err == nil {
				t.Fatalf("New(%+v) succeeded", opts)
			}
		})
	}
}

// historySource holds pods a, b, c added at RVs 2, 3, 4, then a updated
// at 5 and b deleted at 6.
func historySource(t *testing.T, opts Options) *Source {
	s := NewForTest(t, opts)
	for _, n := range []string{"a", "b", "c"} {
		mustAdd(t, s, testkit.Pod(n, ""))
	}
	mustUpdate(t, s, testkit.Pod("a", "", testkit.Labels{"v": "2"}))
	mustDelete(t, s, testkit.Pod("b", ""))
	return s
}

func TestListResourceVersionSemantics(t *testing.T) {
	cases := []struct {
		name      string
		opts      metav1.ListOptions
		noCache   bool
		compact   string
		wantNames []string
		wantRV    string
		wantMore  bool
		wantErr   func(error) bool
	}{
		{name: "most recent", opts: metav1.ListOptions{}, wantNames: []string{"a", "c"}, wantRV: "6"},
		{name: "most recent with limit", opts: metav1.ListOptions{Limit: 1}, wantNames: []string{"a"}, wantRV: "6", wantMore: true},
		{name: "any ignores limit", opts: metav1.ListOptions{ResourceVersion: "0", Limit: 1}, wantNames: []string{"a", "c"}, wantRV: "6"},
		{name: "any without watch cache honours limit", noCache: true, opts: metav1.ListOptions{ResourceVersion: "0", Limit: 1}, wantNames: []string{"a"}, wantRV: "6", wantMore: true},
		{name: "not older than", opts: metav1.ListOptions{ResourceVersion: "3", ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, Limit: 5}, wantNames: []string{"a", "c"}, wantRV: "6"},
		{name: "not older than, implicit", opts: metav1.ListOptions{ResourceVersion: "3"}, wantNames: []string{"a", "c"}, wantRV: "6"},
		{name: "not older than compacted RV", compact: "5", opts: metav1.ListOptions{ResourceVersion: "3", ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan}, wantNames: []string{"a", "c"}, wantRV: "6"},
		{name: "exact", opts: metav1.ListOptions{ResourceVersion: "3", ResourceVersionMatch: metav1.ResourceVersionMatchExact}, wantNames: []string{"a", "b"}, wantRV: "3"},
		{name: "legacy exact with limit", opts: metav1.ListOptions{ResourceVersion: "4", Limit: 2}, wantNames: []string{"a", "b"}, wantRV: "4", wantMore: true},
		{name: "exact after compaction keeps base", compact: "4", opts: metav1.ListOptions{ResourceVersion: "4", ResourceVersionMatch: metav1.ResourceVersionMatchExact}, wantNames: []string{"a", "b", "c"}, wantRV: "4"},
		{name: "exact compacted", compact: "5", opts: metav1.ListOptions{ResourceVersion: "4", ResourceVersionMatch: metav1.ResourceVersionMatchExact}, wantErr: apierrors.IsResourceExpired},
		{name: "too large", opts: metav1.ListOptions{ResourceVersion: "7", ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan}, wantErr: isTooLarge},
		{name: "too large exact", opts: metav1.ListOptions{ResourceVersion: "70", ResourceVersionMatch: metav1.ResourceVersionMatchExact}, wantErr: isTooLarge},
		{name: "match without RV", opts: metav1.ListOptions{ResourceVersionMatch: metav1.ResourceVersionMatchExact}, wantErr: apierrors.IsInvalid},
		{name: "exact RV 0", opts: metav1.ListOptions{ResourceVersion: "0", ResourceVersionMatch: metav1.ResourceVersionMatchExact}, wantErr: apierrors.IsInvalid},
		{name: "sendInitialEvents on list", opts: metav1.ListOptions{SendInitialEvents: ptrTrue()}, wantErr: apierrors.IsInvalid},
		{name: "garbage RV", opts: metav1.ListOptions{ResourceVersion: "abc"}, wantErr: apierrors.IsBadRequest},
		{name: "label selector", opts: metav1.ListOptions{LabelSelector: "v=2"}, wantNames: []string{"a"}, wantRV: "6"},
		{name: "field selector", opts: metav1.ListOptions{FieldSelector: "metadata.name=c"}, wantNames: []string{"c"}, wantRV: "6"},
		{name: "unsupported field selector", opts: metav1.ListOptions{FieldSelector: "spec.nodeName=x"}, wantErr: apierrors.IsBadRequest},
		{name: "bad label selector", opts: metav1.ListOptions{LabelSelector: "a in ("}, wantErr: apierrors.IsBadRequest},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := historySource(t, Options{DisableWatchCache: tc.noCache})
			if tc.compact != "" {
				if err := s.Compact(tc.compact); err != nil {
					t.Fatal(err)
				}
			}
			list, err := s.Endpoint(podGVK, "").List(tc.opts)
			if tc.wantErr != nil {
				if err == nil || !tc.wantErr(err) {
					t.Fatalf("List(%+v) error = %v, want a matching error", tc.opts, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("List(%+v): %v", tc.opts, err)
			}
			if _, ok := list.(*corev1.PodList); !ok {
				t.Fatalf("list type %T, want *v1.PodList", list)
			}
			rv, cont := listMeta(t, list)
			if got := names(t, list); !reflect.DeepEqual(got, tc.wantNames) || rv != tc.wantRV || (cont != "") != tc.wantMore {
				t.Fatalf("List(%+v) = %v at RV %s (continue %q), want %v at %s (more %v)", tc.opts, got, rv, cont, tc.wantNames, tc.wantRV, tc.wantMore)
			}
		})
	}
}

func ptrTrue() *bool { b := true; return &b }

func isTooLarge(err error) bool {
	return apierrors.IsTimeout(err) && apierrors.HasStatusCause(err, metav1.CauseTypeResourceVersionTooLarge)
}

// TestPaginationIsConsistent checks that later pages come from the first
// page's snapshot even while the source changes, and that compaction
// expires the continue token.
func TestPaginationIsConsistent(t *testing.T) {
	s := NewForTest(t, Options{})
	for i := range 10 {
		mustAdd(t, s, testkit.Pod("p"+strconv.Itoa(i), ""))
	}
	ep := s.Endpoint(podGVK, "")
	list, err := ep.List(metav1.ListOptions{Limit: 4})
	if err != nil {
		t.Fatal(err)
	}
	rv, cont := listMeta(t, list)
	got := names(t, list)
	// Churn between pages: delete an unlisted pod, add one after it,
	// update a listed one.
	mustDelete(t, s, testkit.Pod("p7", ""))
	mustAdd(t, s, testkit.Pod("p99", ""))
	mustUpdate(t, s, testkit.Pod("p0", ""))
	for cont != "" {
		page, err := ep.List(metav1.ListOptions{Limit: 4, Continue: cont})
		if err != nil {
			t.Fatalf("continue: %v", err)
		}
		var prv string
		prv, cont = listMeta(t, page)
		if prv != rv {
			t.Fatalf("page RV %s, want the snapshot RV %s", prv, rv)
		}
		got = append(got, names(t, page)...)
	}
	want := []string{"p0", "p1", "p2", "p3", "p4", "p5", "p6", "p7", "p8", "p9"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("paginated list = %v, want %v", got, want)
	}

	first, err := ep.List(metav1.ListOptions{Limit: 4})
	if err != nil {
		t.Fatal(err)
	}
	_, cont = listMeta(t, first)
	if err := s.Compact(s.ResourceVersion()); err != nil {
		t.Fatal(err)
	}
	// The snapshot RV is the current one, still not compacted away.
	if _, err := ep.List(metav1.ListOptions{Limit: 4, Continue: cont}); err != nil {
		t.Fatalf("continue at the compaction RV: %v", err)
	}
	mustAdd(t, s, testkit.Pod("late", ""))
	if err := s.Compact(s.ResourceVersion()); err != nil {
		t.Fatal(err)
	}
	_, err = ep.List(metav1.ListOptions{Limit: 4, Continue: cont})
	if !apierrors.IsResourceExpired(err) {
		t.Fatalf("continue after compaction: %v, want 410 Expired", err)
	}
}

func TestContinueTokenValidation(t *testing.T) {
	s := NewForTest(t, Options{})
	for i := range 3 {
		mustAdd(t, s, testkit.Pod("p"+strconv.Itoa(i), ""))
	}
	list, err := s.Endpoint(podGVK, "").List(metav1.ListOptions{Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	_, cont := listMeta(t, list)
	cases := map[string]struct {
		ep   *Endpoint
		opts metav1.ListOptions
	}{
		"garbage":        {s.Endpoint(podGVK, ""), metav1.ListOptions{Continue: "%%%"}},
		"other kind":     {s.Endpoint(corev1.SchemeGroupVersion.WithKind("ConfigMap"), ""), metav1.ListOptions{Continue: cont}},
		"other scope":    {s.Endpoint(podGVK, "ns"), metav1.ListOptions{Continue: cont}},
		"with RV":        {s.Endpoint(podGVK, ""), metav1.ListOptions{Continue: cont, ResourceVersion: "3"}},
		"with RV match":  {s.Endpoint(podGVK, ""), metav1.ListOptions{Continue: cont, ResourceVersion: "3", ResourceVersionMatch: metav1.ResourceVersionMatchExact}},
		"JSON not token": {s.Endpoint(podGVK, ""), metav1.ListOptions{Continue: "e30"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := tc.ep.List(tc.opts)
			if !apierrors.IsBadRequest(err) && !apierrors.IsInvalid(err) {
				t.Fatalf("List(%+v) = %v, want 400 or 422", tc.opts, err)
			}
		})
	}
}

func TestListNamespaceAndKinds(t *testing.T) {
	s := NewForTest(t, Options{})
	mustAdd(t, s, testkit.Pod("x", "", testkit.Namespace("a")))
	mustAdd(t, s, testkit.Pod("y", "", testkit.Namespace("b")))
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "cm"}}
	mustAdd(t, s, cm)
	u := &unstructured.Unstructured{}
	crdGVK := schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}
	u.SetGroupVersionKind(crdGVK)
	u.SetName("w")
	mustAdd(t, s, u)

	list, err := s.Endpoint(podGVK, "b").List(metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := names(t, list); !reflect.DeepEqual(got, []string{"y"}) {
		t.Fatalf("namespaced list = %v", got)
	}
	list, err = s.Endpoint(crdGVK, "").List(metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ul, ok := list.(*unstructured.UnstructuredList)
	if !ok || len(ul.Items) != 1 || ul.Items[0].GetName() != "w" || ul.GetKind() != "WidgetList" {
		t.Fatalf("unstructured list = %#v", list)
	}
	rv, _ := listMeta(t, list)
	if rv != "5" {
		t.Fatalf("list RV %s, want the global RV 5", rv)
	}
	st := s.Stats()
	if st.ByKind[podGVK].Lists != 1 || st.ByKind[crdGVK].Lists != 1 || st.Lists != 2 {
		t.Fatalf("stats = %+v", st)
	}
}

func TestListFaults(t *testing.T) {
	cases := map[string]struct {
		err   error
		check func(error) bool
	}{
		"429 with Retry-After": {TooManyRequests(7), func(err error) bool {
			d, ok := apierrors.SuggestsClientDelay(err)
			return apierrors.IsTooManyRequests(err) && ok && d == 7
		}},
		"connection refused": {ConnectionRefused(), isConnRefused},
		"500":                {InternalError("boom"), apierrors.IsInternalError},
		"too large RV":       {TooLargeResourceVersion(10, 5), isTooLarge},
		"expired":            {Expired("gone"), apierrors.IsResourceExpired},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s := NewForTest(t, Options{})
			ep := s.Endpoint(podGVK, "")
			s.FailLists(2, tc.err)
			for i := range 2 {
				if _, err := ep.List(metav1.ListOptions{}); !tc.check(err) {
					t.Fatalf("list %d: error %v does not match", i, err)
				}
			}
			if _, err := ep.List(metav1.ListOptions{}); err != nil {
				t.Fatalf("third list: %v, want success", err)
			}
			reqs := s.Requests()
			if len(reqs) != 3 || reqs[0].Err == nil || reqs[2].Err != nil || reqs[0].Verb != "list" {
				t.Fatalf("requests = %+v", reqs)
			}
		})
	}
}

func TestListCancelledContext(t *testing.T) {
	s := NewForTest(t, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Endpoint(podGVK, "").ListWithContext(ctx, metav1.ListOptions{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("List with cancelled ctx: %v", err)
	}
}

func TestNewForTestAddsInOrder(t *testing.T) {
	s := NewForTest(t, Options{}, testkit.Pods("b", "a")...)
	for name, want := range map[string]string{"b": "2", "a": "3"} {
		obj, ok := s.Get(podGVK, "ns", name)
		if !ok {
			t.Fatalf("ns/%s not found", name)
		}
		if rv := obj.(*corev1.Pod).ResourceVersion; rv != want {
			t.Errorf("ns/%s at %s, want %s", name, rv, want)
		}
	}
}
