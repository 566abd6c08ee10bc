package factory

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"

	"github.com/warmcache/warmcache/informer"
	"github.com/warmcache/warmcache/internal/testkit"
	"github.com/warmcache/warmcache/store/bolt"
)

// TestEachInformerRunsOnItsStart checks Start's contract, client-go's
// factory's: an informer runs on the context of the Start that started
// it, so one created after an earlier Start's context ended runs from the
// next Start, a later Start's end does not stop the informers an earlier
// one started, and an informer whose context ended stays stopped.
func TestEachInformerRunsOnItsStart(t *testing.T) {
	src := newSource(t, "a")
	srv := serveSource(t, src)
	f := newFactory(t, filepath.Join(t.TempDir(), "f.db"), srv.URL)
	defer func() {
		if err := f.Shutdown(); err != nil {
			t.Error(err)
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Timeout())
	defer cancel()
	informerOf := func(ns string) cache.SharedIndexInformer {
		t.Helper()
		inf, err := f.ForResource(ctx, podsGVR, "Pod", Scope{Namespace: ns})
		if err != nil {
			t.Fatal(err)
		}
		return inf
	}
	waitStopped := func(what string, inf cache.SharedIndexInformer) {
		t.Helper()
		if err := wait.PollUntilContextCancel(ctx, 10*time.Millisecond, true, func(context.Context) (bool, error) {
			return inf.IsStopped(), nil
		}); err != nil {
			t.Fatalf("%s: still running after its Start's context ended", what)
		}
	}

	first := informerOf("ns")
	ctx1, end1 := context.WithCancel(ctx)
	f.Start(ctx1)
	if !cache.WaitForCacheSync(ctx.Done(), first.HasSynced) {
		t.Fatal("the first informer did not sync")
	}
	end1()
	waitStopped("the first Start's informer", first)

	// Created after the first context ended: the next Start runs it.
	second := informerOf("")
	ctx2, end2 := context.WithCancel(ctx)
	defer end2()
	f.Start(ctx2)
	if !cache.WaitForCacheSync(ctx.Done(), second.HasSynced) {
		t.Fatal("an informer created after the first Start's context ended did not run on the next Start")
	}

	// A third Start, ended at once, starts nothing and stops nothing:
	// the second informer still follows the watch.
	ctx3, end3 := context.WithCancel(ctx)
	f.Start(ctx3)
	end3()
	if _, err := src.Add(pod("b", "")); err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextCancel(ctx, 10*time.Millisecond, true, func(context.Context) (bool, error) {
		_, ok, err := second.GetStore().GetByKey("ns/b")
		return ok, err
	}); err != nil {
		t.Fatalf("the second informer stopped following its watch when a later Start's context ended: %v", err)
	}

	end2()
	waitStopped("the second Start's informer", second)
}

// TestShutdownStopsInformersOfEveryStart checks that Shutdown stops the
// informers of every Start, whatever their contexts, and that Start then
// does nothing.
func TestShutdownStopsInformersOfEveryStart(t *testing.T) {
	srv := serveSource(t, newSource(t, "a"))
	f := newFactory(t, filepath.Join(t.TempDir(), "f.db"), srv.URL)
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Timeout())
	defer cancel()
	var infs []cache.SharedIndexInformer
	for _, ns := range []string{"ns", ""} {
		inf, err := f.ForResource(ctx, podsGVR, "Pod", Scope{Namespace: ns})
		if err != nil {
			t.Fatal(err)
		}
		infs = append(infs, inf)
		f.Start(context.Background()) // never ends
	}
	// Shutdown waits for the runs: bounded, so that one it cannot stop
	// fails the test instead of hanging it.
	shut := make(chan error, 1)
	go func() { shut <- f.Shutdown() }()
	select {
	case err := <-shut:
		if err != nil {
			t.Fatal(err)
		}
	case <-ctx.Done():
		t.Fatal("Shutdown did not return: an informer's run did not stop")
	}
	for i, inf := range infs {
		if !inf.IsStopped() {
			t.Fatalf("informer %d runs after Shutdown", i)
		}
	}
	f.Start(context.Background())
	if _, err := f.ForResource(ctx, podsGVR, "Pod", Scope{Namespace: "other"}); !errors.Is(err, ErrShutdown) {
		t.Fatalf("ForResource after Shutdown: %v, want ErrShutdown", err)
	}
}

// TestSecondShutdownWaitsForTheFirst checks that a Shutdown called while
// another is closing the factory returns only once the file is closed, as
// client-go's Shutdown returns only once its informers have stopped.
func TestSecondShutdownWaitsForTheFirst(t *testing.T) {
	srv := serveSource(t, newSource(t, "a"))
	f := newFactory(t, filepath.Join(t.TempDir(), "f.db"), srv.URL)
	if err := f.Err(); err != nil {
		t.Fatalf("Err before Shutdown: %v", err)
	}
	// Hold the first Shutdown at its wait for the informers' runs.
	f.wg.Add(1)
	first := make(chan error, 1)
	go func() { first <- f.Shutdown() }()
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Timeout())
	defer cancel()
	if err := wait.PollUntilContextCancel(ctx, time.Millisecond, true, func(context.Context) (bool, error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		return f.shutdown, nil
	}); err != nil {
		t.Fatal("the first Shutdown did not begin")
	}
	// Err reports the shutdown from its start, not from its end.
	if err := f.Err(); !errors.Is(err, ErrShutdown) || !errors.Is(err, informer.ErrStopped) {
		t.Fatalf("Err while Shutdown runs: %v, want ErrShutdown and informer.ErrStopped", err)
	}
	second := make(chan error, 1)
	go func() { second <- f.Shutdown() }()
	// A correct Shutdown cannot return here, whatever the scheduling;
	// the window only bounds how long a wrong one has to show itself.
	select {
	case err := <-second:
		t.Fatalf("the second Shutdown returned (%v) while the first still waited for the informers", err)
	case <-time.After(100 * time.Millisecond):
	}
	f.wg.Done()
	if err := <-second; err != nil {
		t.Fatalf("second Shutdown: %v", err)
	}
	if _, err := f.DB().Identities(ctx); !errors.Is(err, bolt.ErrClosed) {
		t.Fatalf("the second Shutdown returned before the file was closed (Identities: %v)", err)
	}
	if err := <-first; err != nil {
		t.Fatalf("first Shutdown: %v", err)
	}
}

// TestWatchDiscoveredAfterStart checks that the informers WatchDiscovered
// creates when the factory has started already run at once, on the latest
// Start's context, without another Start.
func TestWatchDiscoveredAfterStart(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Timeout())
	defer cancel()
	f := newDiscoveryFactory(t, filepath.Join(t.TempDir(), "f.db"), newDynamicFake(obj(configMapsGVR, "ConfigMap", "default", "a")))
	defer func() {
		if err := f.Shutdown(); err != nil {
			t.Error(err)
		}
	}()
	f.Start(ctx)
	no := false
	d, err := f.WatchDiscovered(ctx, DiscoveryOptions{Unstructured: true, PollInterval: time.Hour, CRDs: &no, Discovery: newFakeDiscovery(coreList())})
	if err != nil {
		t.Fatal(err)
	}
	if !d.WaitForCacheSync(ctx) {
		t.Fatal("the informers of a WatchDiscovered called after Start never synced")
	}
}

// TestDiscoveryRunsOnTheNextStart checks that the discovery's loop, which
// runs on the Start that finds it ready, runs again on the next Start once
// that context ended, and that the informers it then creates run on the
// new one.
func TestDiscoveryRunsOnTheNextStart(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Timeout())
	defer cancel()
	dyn := newDynamicFake(obj(configMapsGVR, "ConfigMap", "default", "a"), obj(gadgetsGVR, "Gadget", "", "g"))
	disc := newFakeDiscovery(coreList())
	f := newDiscoveryFactory(t, filepath.Join(t.TempDir(), "f.db"), dyn)
	defer func() {
		if err := f.Shutdown(); err != nil {
			t.Error(err)
		}
	}()
	added := make(chan cache.SharedIndexInformer, 4)
	no := false
	d, err := f.WatchDiscovered(ctx, DiscoveryOptions{
		Unstructured: true, PollInterval: time.Hour, CRDs: &no, Discovery: disc,
		OnAdd: func(gvr schema.GroupVersionResource, inf cache.SharedIndexInformer) {
			if gvr == gadgetsGVR {
				added <- inf
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx1, end1 := context.WithCancel(ctx)
	f.Start(ctx1)
	if !d.WaitForCacheSync(ctx) {
		t.Fatal("did not sync")
	}
	end1()
	if err := wait.PollUntilContextCancel(ctx, time.Millisecond, true, func(context.Context) (bool, error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		return f.discoveryCtx == nil, nil
	}); err != nil {
		t.Fatal("the discovery's loop still runs after its Start's context ended")
	}

	disc.set(coreList(), gadgetList())
	f.Start(ctx) // the loop's first refresh finds the gadgets
	select {
	case inf := <-added:
		if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
			t.Fatal("the informer the loop created on the second Start did not sync")
		}
	case <-ctx.Done():
		t.Fatal("the discovery's loop did not run again on the next Start")
	}
}
