package informer

import (
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/warmcache/warmcache/internal/testkit"
)

// TestRelistReleasesMemory checks that a committed relist of
// releaseAfterListed objects or more asks for its memory to be returned,
// each time, unless KeepListMemory is set, and that a smaller one does
// not: on every store, through a relist and a fill alike.
func TestRelistReleasesMemory(t *testing.T) {
	for sname, newStore := range testStores() {
		for _, tc := range []struct {
			name    string
			objects int
			keep    bool
			want    int32
		}{
			{"large", releaseAfterListed, false, 2},
			{"small", releaseAfterListed - 1, false, 0},
			{"kept", releaseAfterListed, true, 0},
		} {
			t.Run(sname+"/"+tc.name, func(t *testing.T) {
				inf := newTestInformer(t, Options{Store: newStore(t), KeepListMemory: tc.keep})
				var released atomic.Int32
				inf.releaseMemory = func() { released.Add(1) }
				h := startHarness(t, inf)
				objs := make([]interface{}, tc.objects)
				for i := range objs {
					objs[i] = testkit.Pod(fmt.Sprintf("p%04d", i), "2")
				}
				h.relist("5", objs...)
				h.waitIdle("6")
				if got := released.Load(); got != min(tc.want, 1) {
					t.Fatalf("after the first relist of %d objects: %d requests, want %d", tc.objects, got, min(tc.want, 1))
				}
				h.relist("7", objs...)
				h.waitIdle("8")
				if got := released.Load(); got != tc.want {
					t.Fatalf("after the second relist of %d objects: %d requests, want %d", tc.objects, got, tc.want)
				}
			})
		}
	}
}
