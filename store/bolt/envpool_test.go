package bolt

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"

	"github.com/warmcache/warmcache/internal/testkit"
	"github.com/warmcache/warmcache/store/codec"
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

// keepingCodec is testkit.PodJSON that keeps what every Encode appended,
// as a codec that caches its encodings might: its buffers must never be
// recycled.
type keepingCodec struct {
	testkit.PodJSON
	mu   *sync.Mutex
	kept *[][]byte
	was  *[]string
}

func (c keepingCodec) Encode(dst []byte, obj runtime.Object) ([]byte, error) {
	out, err := c.PodJSON.Encode(dst, obj)
	if err == nil {
		// What it appended: the store patches its own header in dst.
		mine := out[len(dst):]
		c.mu.Lock()
		*c.kept = append(*c.kept, mine)
		*c.was = append(*c.was, string(mine))
		c.mu.Unlock()
	}
	return out, err
}

// TestEnvelopeBuffersOfOtherCodecsAreNotRecycled: a codec outside package
// codec may keep what its Encode returned (codec.RetainsNothing is false
// for it), so the store never reuses that memory.
func TestEnvelopeBuffersOfOtherCodecsAreNotRecycled(t *testing.T) {
	var kept [][]byte
	var was []string
	c := keepingCodec{mu: &sync.Mutex{}, kept: &kept, was: &was}
	if codec.RetainsNothing(c) {
		t.Fatal("RetainsNothing is true for a codec outside package codec")
	}
	db := openDB(t, tempPath(t), Options{Sync: UnsafeNoSync})
	s, err := db.Resource(context.Background(), ResourceOptions{Identity: podsID, Codec: c})
	must(t, err)
	for r := range 20 {
		p := mkPod("ns", fmt.Sprint("p-", r%3), fmt.Sprint(r+1))
		p.Spec.Containers[0].Image = strings.Repeat("i", r*50)
		must(t, s.Apply(context.Background(), []cache.Transaction{{Type: cache.TransactionTypeUpdate, Object: p}}, ""))
	}
	for i := range kept {
		if string(kept[i]) != was[i] {
			t.Fatalf("encoding %d was overwritten after Encode returned it", i)
		}
	}
}
