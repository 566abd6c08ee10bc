package storetest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/warmcache/warmcache/store"
)

// testConcurrentReadersAndWriters runs writers, each owning a namespace,
// beside readers using every read method; run it with -race. Readers check
// what must hold at any instant; the final content must be what the writers
// wrote.
func testConcurrentReadersAndWriters(t *testing.T, h harness) {
	s := h.open(t, nil)
	const writers, readers, rounds = 4, 4, 15
	ctx := context.Background()

	var writersWG, readersWG sync.WaitGroup
	finals := make([][]*corev1.Pod, writers)
	writeErrs := make([]error, writers)
	for w := range writers {
		writersWG.Add(1)
		go func() {
			defer writersWG.Done()
			finals[w], writeErrs[w] = writeRounds(ctx, s, fmt.Sprintf("w%d", w), rounds)
		}()
	}
	done := make(chan struct{})
	readErrs := make([]error, readers)
	for r := range readers {
		readersWG.Add(1)
		go func() {
			defer readersWG.Done()
			for {
				select {
				case <-done:
					return
				default:
				}
				if err := readOnce(ctx, s, r); err != nil {
					readErrs[r] = err
					return
				}
			}
		}()
	}
	writersWG.Wait()
	close(done)
	readersWG.Wait()
	if err := errors.Join(append(writeErrs, readErrs...)...); err != nil {
		t.Fatal(err)
	}
	var want []*corev1.Pod
	for _, f := range finals {
		want = append(want, f...)
	}
	assertContent(t, s, want...)
}

// writeRounds writes to namespace ns with every write method and returns
// the pods that remain.
func writeRounds(ctx context.Context, s store.Store, ns string, rounds int) ([]*corev1.Pod, error) {
	rv := 0
	next := func() string { rv++; return fmt.Sprint(rv) }
	var keep []*corev1.Pod
	for i := range rounds {
		a := namePod(ns, 3*i, next(), users(ns+"-a"))
		b := namePod(ns, 3*i+1, next(), users(ns+"-b,shared"))
		c := namePod(ns, 3*i+2, next())
		if err := s.Add(a); err != nil {
			return nil, err
		}
		a2 := withRV(a, next())
		a2.Annotations[annotationUsers] = ns + "-a2"
		if err := s.Update(a2); err != nil {
			return nil, err
		}
		if err := s.Apply(ctx, []cache.Transaction{add(b), add(c)}, ""); err != nil {
			return nil, err
		}
		gone, b2 := withRV(c, next()), withRV(b, next())
		if terr := s.Transaction(del(gone), update(b2)); terr != nil {
			return nil, terr
		}
		s.Bookmark(next())
		keep = append(keep, a2, b2)
	}
	return keep, nil
}

// readOnce calls every read method once and checks what holds whatever the
// writers are doing.
func readOnce(ctx context.Context, s store.Store, r int) error {
	ns := fmt.Sprintf("w%d", r)
	objs, err := s.ByIndex(indexNamespace, ns)
	if err != nil {
		return err
	}
	for _, obj := range objs {
		if p, ok := obj.(*corev1.Pod); !ok || p.Namespace != ns {
			return fmt.Errorf("ByIndex(namespace, %s) returned %T outside it", ns, obj)
		}
	}
	keys, err := s.IndexKeys(indexUsers, "shared")
	if err != nil {
		return err
	}
	for _, k := range keys {
		if _, _, err := s.GetByKey(k); err != nil {
			return err
		}
		if _, _, err := s.ResourceVersionOf(k); err != nil {
			return err
		}
	}
	prev := ""
	if err := s.Scan(ctx, func(key string, obj interface{}) error {
		if key <= prev {
			return fmt.Errorf("Scan key %q after %q", key, prev)
		}
		prev = key
		if _, ok := obj.(*corev1.Pod); !ok {
			return fmt.Errorf("Scan passed a %T", obj)
		}
		return nil
	}); err != nil {
		return err
	}
	if err := s.ScanIndex(ctx, indexUsers, ns+"-a2", func(key string, _ interface{}) error {
		if !strings.HasPrefix(key, ns+"/") {
			return fmt.Errorf("ScanIndex(byUser, %s-a2) passed %s", ns, key)
		}
		return nil
	}); err != nil {
		return err
	}
	if _, err := s.Index(indexUsers, mkPod(ns, "probe", "", users("shared"))); err != nil {
		return err
	}
	if _, err := s.State(); err != nil {
		return err
	}
	_ = s.List()
	_ = s.ListKeys()
	_ = s.ListIndexFuncValues(indexUsers)
	_ = s.LastStoreSyncResourceVersion()
	return nil
}

// testReplaceWhileReading commits relists of one generation of pods after
// another while readers check that they always see exactly one.
func testReplaceWhileReading(t *testing.T, h harness) {
	ctx := context.Background()
	s := h.open(t, nil)
	const perGen, gens, page = 20, 20, 6
	generation := func(g int) []*corev1.Pod {
		out := make([]*corev1.Pod, perGen)
		for i := range out {
			// Consecutive generations share half their keys.
			out[i] = namePod("atomic", g*perGen/2+i, fmt.Sprint(g*perGen+i+1), users(fmt.Sprintf("gen%d", g)))
		}
		return out
	}
	if err := s.Replace(podsToObjects(generation(0)), "1"); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	var wg, started sync.WaitGroup
	readErrs := make([]error, 2)
	for r := range readErrs {
		wg.Add(1)
		started.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; ; n++ {
				if n == 1 {
					started.Done()
				}
				select {
				case <-done:
					return
				default:
				}
				if err := checkOneGeneration(s, perGen); err != nil {
					readErrs[r] = err
					if n == 0 {
						started.Done()
					}
					return
				}
			}
		}()
	}
	started.Wait()
	var last []*corev1.Pod
	for g := 1; g < gens; g++ {
		last = generation(g)
		if err := replaceInPages(ctx, s, last, page, fmt.Sprint(100+g)); err != nil {
			t.Errorf("generation %d: %v", g, err)
			break
		}
	}
	close(done)
	wg.Wait()
	if err := errors.Join(readErrs...); err != nil {
		t.Fatal(err)
	}
	assertContent(t, s, last...)
}

func replaceInPages(ctx context.Context, s store.Store, pods []*corev1.Pod, page int, rv string) error {
	r, err := s.BeginReplace(ctx)
	if err != nil {
		return err
	}
	defer r.Abort()
	for i := 0; i < len(pods); i += page {
		if err := r.Add(ctx, podsToObjects(pods[i:min(i+page, len(pods))])...); err != nil {
			return err
		}
	}
	return r.Commit(ctx, rv)
}
