package informer

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/warmcache/warmcache/internal/podgen"
	"github.com/warmcache/warmcache/store/bolt"
	"github.com/warmcache/warmcache/store/bolt/inspect"
	"github.com/warmcache/warmcache/store/codec"
)

// TestWarmStartRelistsOverwrittenPayload is the scenario of a byte damaged
// on disk inside a stored object, which bbolt reads as valid: a good cache
// file; 8 bytes of one stored pod's containerID overwritten in the file
// (found by searching the raw file, as dd conv=notrunc would write them).
// Verify names the pod; a store read skips it and calls OnCorruption; a
// warm start through the informer relists instead of replaying it, and
// no handler ever sees the mangled containerID.
func TestWarmStartRelistsOverwrittenPayload(t *testing.T) {
	const mangle = "deadbeef"
	src := newSource(t)
	for _, p := range podgen.Pods(8) {
		if _, err := src.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	ep := src.Endpoint(podGVK, "")
	path := filepath.Join(t.TempDir(), "cache.db")

	// A good file.
	st, closeStore := openBolt(t, path, nil, nil)
	r := runInformer(t, ep, Options{Store: st}, newRecorder())
	r.waitSynced(t)
	waitStoreMatches(t, st, src)
	r.stop()
	closeStore()

	// 8 bytes of one pod's containerID overwritten on disk.
	victim := podgen.Pod(3)
	key := victim.Namespace + "/" + victim.Name
	cid := []byte(victim.Status.ContainerStatuses[0].ContainerID)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(data, cid) {
		t.Fatalf("containerID %q not in the file", cid)
	}
	mangled := slices.Concat(cid[:20], []byte(mangle), cid[28:])
	if err := os.WriteFile(path, bytes.ReplaceAll(data, cid, mangled), 0o600); err != nil {
		t.Fatal(err)
	}

	// Verify names the pod.
	ctx := context.Background()
	db, err := bolt.Open(ctx, path, bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	var problems []inspect.Problem
	resolve := func(name string) (codec.Codec, error) { return codec.ByName(nil, name) }
	if err := inspect.Verify(ctx, db, resolve, func(p inspect.Problem) { problems = append(problems, p) }); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(problems, func(p inspect.Problem) bool { return p.Kind == inspect.ProblemChecksum && p.Key == key }) {
		t.Fatalf("Verify reported %v, want a checksum problem for %s", problems, key)
	}

	// A store read (on a copy: it records the resource incomplete) skips
	// the pod and reports it.
	cp := filepath.Join(t.TempDir(), "copy.db")
	if err := os.WriteFile(cp, bytes.ReplaceAll(data, cid, mangled), 0o600); err != nil {
		t.Fatal(err)
	}
	var reported []error
	st, closeStore = openBolt(t, cp, nil, func(err error) { reported = append(reported, err) })
	objs := st.List()
	closeStore()
	if len(objs) != 7 || slices.ContainsFunc(objs, func(o interface{}) bool { return hasMangled(o, mangle) }) {
		t.Errorf("List returned %d objects, want the 7 undamaged ones", len(objs))
	}
	if len(reported) != 1 || !errors.Is(reported[0], bolt.ErrChecksum) || !strings.Contains(reported[0].Error(), key) {
		t.Errorf("OnCorruption got %v, want a checksum mismatch naming %s", reported, key)
	}

	// The warm start relists rather than serve the pod.
	before := src.Stats()
	var infPtr atomic.Pointer[Informer]
	var corrupt atomic.Int32
	st, closeStore = openBolt(t, path, nil, func(err error) {
		if errors.Is(err, bolt.ErrChecksum) {
			corrupt.Add(1)
		}
		if inf := infPtr.Load(); inf != nil {
			inf.ReportCorruption(err)
		}
	})
	defer closeStore()
	var served atomic.Int32
	watch := func(objs ...interface{}) {
		for _, o := range objs {
			if hasMangled(o, mangle) {
				served.Add(1)
			}
		}
	}
	h := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj interface{}) { watch(obj) },
		UpdateFunc: func(o, n interface{}) { watch(o, n) },
		DeleteFunc: func(obj interface{}) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			watch(obj)
		},
	}
	r = runInformer(t, ep, Options{Store: st}, h)
	infPtr.Store(r.inf)
	r.waitSynced(t)
	waitStoreMatches(t, st, src)
	r.stop()
	after := src.Stats()
	if lists := after.Lists + after.WatchLists - before.Lists - before.WatchLists; lists < 2 {
		t.Errorf("%d LIST or WatchList requests, want the resume check and a relist", lists)
	}
	if corrupt.Load() == 0 {
		t.Error("the store never reported the checksum mismatch")
	}
	if n := served.Load(); n != 0 {
		t.Errorf("handlers were given the mangled pod %d times", n)
	}
	obj, ok, err := st.GetByKey(key)
	if err != nil || !ok || hasMangled(obj, mangle) || obj.(*corev1.Pod).Status.ContainerStatuses[0].ContainerID != string(cid) {
		t.Errorf("after the warm start GetByKey(%s) = %v, %v; want the server's pod", key, ok, err)
	}
	if s, err := st.State(); err != nil || !s.Complete {
		t.Errorf("state after the relist: %+v, %v", s, err)
	}
}

// hasMangled reports whether obj is a pod with a containerID containing s.
func hasMangled(obj interface{}, s string) bool {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return false
	}
	for _, c := range p.Status.ContainerStatuses {
		if strings.Contains(c.ContainerID, s) {
			return true
		}
	}
	return false
}
