package informer

import (
	"context"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/warmcache/warmcache/store/codec"
)

// TestWarmStartAheadOfServerNeverReplaysTheFile: a file written against
// one server, reused against another whose resourceVersion has not reached
// the stored one (a recreated cluster, an etcd restored from an older
// backup). The resume check finds the file ahead; the handler is never
// told the stored objects, only the new server's, as initial adds, and the
// informer is synced after that relist.
func TestWarmStartAheadOfServerNeverReplaysTheFile(t *testing.T) {
	old := newSource(t, "a", "b", "c", "d", "e")
	path := filepath.Join(t.TempDir(), "ahead.db")
	c, err := codec.For(nil, podGVK)
	if err != nil {
		t.Fatal(err)
	}
	st, closeStore := openBolt(t, path, c, nil)
	r := runInformer(t, old.Endpoint(podGVK, ""), Options{Store: st})
	r.waitSynced(t)
	r.stop()
	closeStore()

	fresh := newSource(t, "x") // its resourceVersion is behind the file's
	st, closeStore = openBolt(t, path, c, nil)
	defer closeStore()
	rec := newRecorder()
	inf, err := New(fresh.Endpoint(podGVK, ""), &corev1.Pod{}, Options{Store: st, Logger: r.inf.opts.Logger})
	if err != nil {
		t.Fatal(err)
	}
	reg, err := inf.AddEventHandler(rec)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); inf.RunWithContext(ctx) }()
	defer func() { cancel(); <-done }()
	if !cache.WaitFor(ctx, "", reg.HasSyncedChecker()) {
		t.Fatal("not synced")
	}
	want := []event{event("add ns/x@" + getPod(t, fresh, "x").ResourceVersion + " initial=true")}
	equalEvents(t, sortedEvents(rec.Snapshot()), want)
	if keys := inf.GetStore().ListKeys(); len(keys) != 1 || keys[0] != "ns/x" {
		t.Fatalf("store keys %v after the relist, want [ns/x]", keys)
	}
}
