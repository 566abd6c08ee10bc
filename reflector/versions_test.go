package reflector

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/warmcache/warmcache/internal/fakesource"
	"github.com/warmcache/warmcache/internal/testkit"
)

// versionLister is Options.ListVersions over src's pods: its LIST, as
// metadata.
type versionLister struct {
	src   *fakesource.Source
	calls atomic.Int32
	fail  error
}

func (v *versionLister) list(ctx context.Context, opts metav1.ListOptions) (*metav1.PartialObjectMetadataList, error) {
	v.calls.Add(1)
	if v.fail != nil {
		return nil, v.fail
	}
	obj, err := v.src.Endpoint(podGVK, "").ListWithContext(ctx, opts)
	if err != nil {
		return nil, err
	}
	pl, ok := obj.(*corev1.PodList)
	if !ok {
		return nil, fmt.Errorf("list: %T", obj)
	}
	out := &metav1.PartialObjectMetadataList{ListMeta: pl.ListMeta}
	for _, p := range pl.Items {
		out.Items = append(out.Items, metav1.PartialObjectMetadata{ObjectMeta: p.ObjectMeta})
	}
	return out, nil
}

// runVersionChecked runs a warm start from RV 4 of src's pods a, b, c
// (a store larger than its page of 2) with the version check.
func runVersionChecked(t *testing.T, src *fakesource.Source, sink *recorder, v *versionLister, limit int) *harness {
	t.Helper()
	return run(t, src, sink, Options{
		ResumeFrom:        func() (string, bool) { return "4", true },
		StoredVersions:    storedVersions(sink),
		ListVersions:      v.list,
		VersionCheckLimit: limit,
		ListPageSize:      2,
	})
}

// TestVersionCheckUnchanged: a store larger than a page, unchanged since
// the stored RV while the server's moved on: the version check (one
// metadata-only LIST) finds every object at its stored resourceVersion,
// and the warm start syncs at once, with a bookmark at the list's RV and
// a watch from there: no wait for the watch cache's bookmark.
func TestVersionCheckUnchanged(t *testing.T) {
	src, _ := catchUpSource(t, fakesource.Options{})
	sink := newRecorder()
	sink.seed(src)
	otherKind(t, src) // 5
	v := &versionLister{src: src}
	h := runVersionChecked(t, src, sink, v, 0)
	calls := sink.waitCall(t, "MarkSynced")
	if want := []string{"Bookmark 5", "MarkSynced"}; !reflect.DeepEqual(calls, want) {
		t.Fatalf("sink calls = %v, want %v", calls, want)
	}
	h.clk.noBackoff(t, catchUpQuiet)
	lists := requests(src, "list")
	if len(lists) != 1 || lists[0].Options.Limit != minVersionPage || lists[0].Options.ResourceVersion != "" || v.calls.Load() != 1 {
		t.Fatalf("lists %+v (%d of metadata), want one consistent metadata LIST of limit %d", lists, v.calls.Load(), minVersionPage)
	}
	if w := waitWatches(t, src, 1)[0].Options; w.ResourceVersion != "5" {
		t.Fatalf("watch from %s, want the list's resourceVersion 5", w.ResourceVersion)
	}
}

// TestVersionCheckBacklog: objects changed while the reflector was down,
// and the server's last write is another kind's, so no event reaches the
// server's resourceVersion and no bookmark is sent (the source's clock
// never moves). The version check knows which objects differ; MarkSynced
// follows the event that brings the last of them to its listed state. An
// object created and deleted while down keeps the sync pending until its
// delete.
func TestVersionCheckBacklog(t *testing.T) {
	src, _ := catchUpSource(t, fakesource.Options{})
	sink := newRecorder()
	sink.seed(src)
	mustAdd(t, src, testkit.Pod("d", ""))    // 5
	mustUpdate(t, src, podL("a", "2"))       // 6
	mustAdd(t, src, testkit.Pod("e", ""))    // 7
	mustDelete(t, src, testkit.Pod("b", "")) // 8
	mustDelete(t, src, testkit.Pod("e", "")) // 9
	otherKind(t, src)                        // 10
	v := &versionLister{src: src}
	h := runVersionChecked(t, src, sink, v, 0)
	calls := sink.waitCall(t, "MarkSynced")
	want := []string{"Add d@5", "Update a@6", "Add e@7", "Delete b@8", "Delete e@9", "MarkSynced"}
	if !reflect.DeepEqual(calls, want) {
		t.Fatalf("sink calls = %v, want %v", calls, want)
	}
	h.clk.noBackoff(t, catchUpQuiet)
	if w := waitWatches(t, src, 1)[0].Options; w.ResourceVersion != "4" {
		t.Fatalf("watch from %s, want the stored resourceVersion 4", w.ResourceVersion)
	}
	sink.checkModel(t, src)
}

// TestVersionCheckFallsBack: when the version check cannot be made (its
// LIST fails, the resource has grown past twice VersionCheckLimit) or is
// not wanted (a store over VersionCheckLimit, a negative limit), the warm
// start catches up as without it: on the bookmark at the server's
// resourceVersion, never before.
func TestVersionCheckFallsBack(t *testing.T) {
	for _, tc := range []struct {
		name       string
		fail       error
		limit      int
		grow       int
		wantCalls  int32 // ListVersions calls
		wantLimits []int64
	}{
		{name: "list fails", fail: errors.New("metadata lists forbidden"), wantCalls: 1, wantLimits: []int64{1}},
		{name: "grown past the check", limit: 3, grow: 4, wantCalls: 1, wantLimits: []int64{minVersionPage}},
		{name: "store over the limit", limit: 2, wantLimits: []int64{1}},
		{name: "off", limit: -1, wantLimits: []int64{1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src, srcClk := catchUpSource(t, fakesource.Options{})
			sink := newRecorder()
			sink.seed(src)
			for i := range tc.grow {
				mustAdd(t, src, testkit.Pod(fmt.Sprintf("g%d", i), ""))
			}
			otherKind(t, src)
			target := src.ResourceVersion()
			v := &versionLister{src: src, fail: tc.fail}
			h := runVersionChecked(t, src, sink, v, tc.limit)
			waitWatches(t, src, 1)
			if calls := sink.snapshot(); count(calls, "MarkSynced") != 0 {
				t.Fatalf("sink calls %v: synced before the bookmark", calls)
			}
			stepWatch(t, src, srcClk, time.Second)
			calls := sink.waitCall(t, "MarkSynced")
			if last := calls[len(calls)-2]; last != "Bookmark "+target {
				t.Fatalf("sink calls %v, want the bookmark at %s before MarkSynced", calls, target)
			}
			h.clk.noBackoff(t, catchUpQuiet)
			if n := v.calls.Load(); n != tc.wantCalls {
				t.Fatalf("%d metadata LISTs, want %d", n, tc.wantCalls)
			}
			var limits []int64
			for _, l := range requests(src, "list") {
				limits = append(limits, l.Options.Limit)
			}
			if !reflect.DeepEqual(limits, tc.wantLimits) {
				t.Fatalf("LIST limits %v, want %v", limits, tc.wantLimits)
			}
			sink.checkModel(t, src)
		})
	}
}

// TestVersionCheckPages: the version check of a store of 2,400 objects
// lists their metadata in pages of a quarter of it (600), never the whole
// resource in one page, and finds them unchanged.
func TestVersionCheckPages(t *testing.T) {
	const n = 2400
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("p%05d", i)
	}
	src := newSource(t, fakesource.Options{}, names...) // RV n+1
	sink := newRecorder()
	sink.seed(src)
	otherKind(t, src) // n+2
	v := &versionLister{src: src}
	run(t, src, sink, Options{
		ResumeFrom:     func() (string, bool) { return fmt.Sprint(n + 1), true },
		StoredVersions: storedVersions(sink),
		ListVersions:   v.list,
	})
	calls := sink.waitCall(t, "MarkSynced")
	if want := []string{fmt.Sprintf("Bookmark %d", n+2), "MarkSynced"}; !reflect.DeepEqual(calls, want) {
		t.Fatalf("sink calls = %v, want %v", calls, want)
	}
	lists := requests(src, "list")
	if len(lists) != 4 || v.calls.Load() != 4 {
		t.Fatalf("%d LISTs (%d of metadata), want the metadata in 4 pages", len(lists), v.calls.Load())
	}
	for i, l := range lists {
		if l.Options.Limit != n/4 {
			t.Fatalf("LIST %d of limit %d, want %d", i, l.Options.Limit, n/4)
		}
	}
}
