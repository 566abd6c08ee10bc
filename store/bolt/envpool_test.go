package bolt

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"k8s.io/client-go/tools/cache"
)

// TestEnvelopeBuffersOutliveTheirCommit applies batches from several
// goroutines at once, so that one batch prepares its envelopes (in
// recycled buffers) while another commits: a buffer given back before its
// write transaction ended would be overwritten by another batch's object,
// and the file would hold a wrong or torn envelope under some key.
func TestEnvelopeBuffersOutliveTheirCommit(t *testing.T) {
	const writers, keys, rounds = 4, 16, 60
	path := tempPath(t)
	db := openDB(t, path, Options{Sync: UnsafeNoSync, HotBytes: ptrTo[int64](0)})
	s := openPods(t, db, namespaceIndexers())
	image := func(w, k, r int) string {
		// Sizes vary by round, so buffers of every capacity are recycled.
		return fmt.Sprintf("img-%d-%d-%d-%s", w, k, r, strings.Repeat("x", (r*97+k*31)%3000))
	}
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for r := range rounds {
				txns := make([]cache.Transaction, keys)
				for k := range keys {
					p := mkPod(fmt.Sprintf("ns-%d", w), fmt.Sprintf("p-%d", k), fmt.Sprint(r+1))
					p.Spec.Containers[0].Image = image(w, k, r)
					txns[k] = cache.Transaction{Type: cache.TransactionTypeUpdate, Object: p}
				}
				if err := s.Apply(context.Background(), txns, ""); err != nil {
					t.Errorf("writer %d round %d: Apply: %v", w, r, err)
					return
				}
			}
		})
	}
	wg.Wait()
	verifyClean(t, db)
	for w := range writers {
		for k := range keys {
			key := fmt.Sprintf("ns-%d/p-%d", w, k)
			obj, ok, err := s.GetByKey(key)
			if err != nil || !ok {
				t.Fatalf("GetByKey(%s) = %v, %v", key, ok, err)
			}
			if got, want := podsOf(t, []interface{}{obj})[key].Spec.Containers[0].Image, image(w, k, rounds-1); got != want {
				t.Errorf("%s: image %.40q..., want %.40q...", key, got, want)
			}
		}
	}
}
