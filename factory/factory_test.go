package factory

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2/ktesting"

	"github.com/warmcache/warmcache/informer"
	"github.com/warmcache/warmcache/store/bolt"
	"github.com/warmcache/warmcache/store/bolt/inspect"
	"github.com/warmcache/warmcache/store/memory"
)

var podsGVR = corev1.SchemeGroupVersion.WithResource("pods")

func newFactory(t *testing.T, path, host string) *Factory {
	t.Helper()
	l := ktesting.NewLogger(t, ktesting.NewConfig())
	f, err := New(context.Background(), Options{
		Path:       path,
		Bolt:       bolt.Options{Sync: bolt.UnsafeNoSync},
		RESTConfig: &rest.Config{Host: host},
		Logger:     &l,
	})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestFactoryTypedAndDynamicInformersShareAFile(t *testing.T) {
	src := newSource(t, "a", "b")
	other := pod("x", "")
	other.Namespace = "other"
	other.Labels = map[string]string{"app": "x"}
	if _, err := src.Add(other); err != nil {
		t.Fatal(err)
	}
	srv := serveSource(t, src)
	path := filepath.Join(t.TempDir(), "f.db")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	run := func() (lists int) {
		f := newFactory(t, path, srv.URL)
		defer func() {
			if err := f.Shutdown(); err != nil {
				t.Error(err)
			}
		}()
		before := src.Stats()
		all, err := f.ForResource(ctx, podsGVR, "Pod", Scope{})
		if err != nil {
			t.Fatal(err)
		}
		again, err := f.ForResource(ctx, podsGVR, "Pod", Scope{})
		if err != nil || again != all {
			t.Fatalf("second ForResource returned another informer (%v)", err)
		}
		inNS, err := f.ForResource(ctx, podsGVR, "", Scope{Namespace: "ns"}) // kind guessed
		if err != nil {
			t.Fatal(err)
		}
		dyn, err := f.ForDynamic(ctx, podsGVR, Scope{LabelSelector: "app = x"})
		if err != nil {
			t.Fatal(err)
		}
		syncAll(ctx, t, f)
		if n := len(all.GetStore().ListKeys()); n != 3 {
			t.Fatalf("all pods: %d", n)
		}
		if n := len(inNS.GetStore().ListKeys()); n != 2 {
			t.Fatalf("pods in ns: %d", n)
		}
		objs := dyn.GetStore().List()
		if len(objs) != 1 || objs[0].(*unstructured.Unstructured).GetName() != "x" {
			t.Fatalf("dynamic informer holds %v", objs)
		}
		res, err := inspect.Resources(ctx, f.DB())
		if res = withoutSamples(res); err != nil || len(res) != 3 {
			t.Fatalf("file holds %d resources (%v), want 3 scopes", len(res), err)
		}
		after := src.Stats()
		return after.Lists + after.WatchLists - before.Lists - before.WatchLists
	}
	if lists := run(); lists != 3 {
		t.Fatalf("cold start: %d lists, want 3", lists)
	}
	// A warm start lists nothing but each informer's resume check (a
	// consistent LIST that reads the server's resourceVersion: of one
	// object, or of a page for a store of at most a page, whose objects
	// are unchanged here).
	checks := len(src.Requests())
	if lists := run(); lists != 3 {
		t.Fatalf("warm start: %d lists, want 3 resume checks", lists)
	}
	for _, r := range src.Requests()[checks:] {
		if r.Verb == "list" && (r.Options.ResourceVersion != "" || r.Options.Continue != "") {
			t.Fatalf("warm start listed %+v, want only resume checks (RV \"\", one page)", r.Options)
		}
	}
}

func TestFactoryMovesCorruptFileAside(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "bad.db")
	if err := os.WriteFile(path, []byte(strings.Repeat("not a bbolt file", 1000)), 0o600); err != nil {
		t.Fatal(err)
	}
	f := newFactory(t, path, "")
	if err := f.Shutdown(); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var moved bool
	for _, e := range entries {
		moved = moved || strings.HasPrefix(e.Name(), "bad.db.corrupt-")
	}
	if !moved {
		t.Fatalf("corrupt file not moved aside: %v", entries)
	}
}

func TestFactoryErrors(t *testing.T) {
	f := newFactory(t, "", "")
	ctx := context.Background()
	if _, err := f.ForResource(ctx, podsGVR, "NoSuchKind", Scope{}); !errors.Is(err, ErrResource) {
		t.Fatalf("unknown kind: %v", err)
	}
	if _, err := f.ForResource(ctx, podsGVR, "Pod", Scope{LabelSelector: "=="}); !errors.Is(err, ErrInvalidOptions) {
		t.Fatalf("bad selector: %v", err)
	}
	if err := f.Shutdown(); err != nil {
		t.Fatal(err)
	}
	if _, err := f.InformerFor(ctx, podsGVR, &corev1.Pod{}, nopLW, Scope{}, nil); !errors.Is(err, informer.ErrStopped) {
		t.Fatalf("after shutdown: %v", err)
	}
}

func TestFactoryNewInformerHook(t *testing.T) {
	src := newSource(t, "a", "b")
	path := filepath.Join(t.TempDir(), "hook.db")
	f := newFactory(t, path, "")
	defer func() {
		if err := f.Shutdown(); err != nil {
			t.Error(err)
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	newInformer := f.NewInformerFunc(ctx, func(runtime.Object) Scope { return Scope{Namespace: "ns"} })
	lw := src.Endpoint(podGVK, "ns")
	si := newInformer(lw, &corev1.Pod{}, time.Minute, cache.Indexers{"byName": func(obj interface{}) ([]string, error) {
		return []string{obj.(*corev1.Pod).Name}, nil
	}})
	inf, ok := si.(*informer.Informer)
	if !ok {
		t.Fatalf("hook returned %T, want a warmcache informer", si)
	}
	done := make(chan struct{})
	go func() { defer close(done); si.RunWithContext(ctx) }()
	if !cache.WaitFor(ctx, "", si.HasSyncedChecker()) {
		t.Fatal("not synced")
	}
	objs, err := si.GetIndexer().ByIndex("byName", "b")
	if err != nil || len(objs) != 1 {
		t.Fatalf("ByIndex: %v, %v", objs, err)
	}
	if inf.Store().(*bolt.Store).Identity().Namespace != "ns" {
		t.Fatalf("identity %+v does not record the scope", inf.Store().(*bolt.Store).Identity())
	}
	// A second informer of the same scope would share a store with
	// another ListerWatcher: it falls back to client-go's.
	if _, ok := newInformer(lw, &corev1.Pod{}, 0, nil).(*informer.Informer); ok {
		t.Fatal("a second informer of the same scope got the same store")
	}
	cancel()
	<-done
}

// A dynamic and a typed informer of the same built-in resource and scope
// are two informers, each with its objects' type, whichever comes first.
func TestDynamicAndTypedInformersOfABuiltInAreApart(t *testing.T) {
	srv := serveSource(t, newSource(t, "a", "b"))
	for _, dynamicFirst := range []bool{true, false} {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		f := newFactory(t, filepath.Join(t.TempDir(), "cache.db"), srv.URL)
		var typed, dyn *informer.Informer
		var err error
		get := []func() error{
			func() error { typed, err = f.ForResource(ctx, podsGVR, "", Scope{}); return err },
			func() error { dyn, err = f.ForDynamic(ctx, podsGVR, Scope{}); return err },
		}
		if dynamicFirst {
			get[0], get[1] = get[1], get[0]
		}
		for _, g := range get {
			if err := g(); err != nil {
				t.Fatal(err)
			}
		}
		if typed == dyn {
			t.Fatalf("dynamic first %t: ForDynamic and ForResource returned the same informer", dynamicFirst)
		}
		syncAll(ctx, t, f)
		for _, o := range typed.GetStore().List() {
			if _, ok := o.(*corev1.Pod); !ok {
				t.Errorf("dynamic first %t: the typed informer holds a %T", dynamicFirst, o)
			}
		}
		for _, o := range dyn.GetStore().List() {
			if _, ok := o.(*unstructured.Unstructured); !ok {
				t.Errorf("dynamic first %t: the dynamic informer holds a %T", dynamicFirst, o)
			}
		}
		if n, m := len(typed.GetStore().List()), len(dyn.GetStore().List()); n != 2 || m != 2 {
			t.Errorf("dynamic first %t: typed holds %d pods, dynamic %d; want 2 each", dynamicFirst, n, m)
		}
		if err := f.Shutdown(); err != nil {
			t.Error(err)
		}
	}
}

// New's errors start with "factory: " and name what is wrong: a missing
// cache directory as such, not as the lock file bolt cannot create in it.
func TestNewErrors(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	held, err := New(context.Background(), Options{Path: filepath.Join(dir, "held.db"), Bolt: bolt.Options{Sync: bolt.UnsafeNoSync}, ClusterID: "test"})
	if err != nil {
		t.Fatal(err)
	}
	defer held.Shutdown()
	mem, err := memory.New(memory.Options{})
	if err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing")
	for _, tc := range []struct {
		name   string
		opts   Options
		prefix string
		is     error
	}{
		{"missing directory", Options{Path: filepath.Join(missing, "cache.db")}, "factory: cache directory " + missing + " does not exist", fs.ErrNotExist},
		{"directory is a file", Options{Path: filepath.Join(file, "cache.db")}, "factory: invalid options: cache directory " + file + " of Options.Path " + filepath.Join(file, "cache.db") + " is not a directory", ErrInvalidOptions},
		{"path is a directory", Options{Path: dir}, "factory: invalid options: Options.Path " + dir + " is a directory, not a cache file: name the file, for example " + filepath.Join(dir, "cache.db"), ErrInvalidOptions},
		{"file held by another factory of this process", Options{Path: filepath.Join(dir, "held.db"), Bolt: bolt.Options{Timeout: 10 * time.Millisecond}},
			"factory: " + filepath.Join(dir, "held.db") + " is open in another Factory of this process", bolt.ErrLocked},
		{"store set", Options{Informer: informer.Options{Store: mem}}, "factory: invalid options: Options.Informer.Store", ErrInvalidOptions},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := New(context.Background(), tc.opts)
			if err == nil {
				_ = f.Shutdown()
				t.Fatal("New succeeded")
			}
			if !strings.HasPrefix(err.Error(), tc.prefix) || !errors.Is(err, tc.is) {
				t.Fatalf("New: %v\nwant an error starting with %q, wrapping %v", err, tc.prefix, tc.is)
			}
			if strings.Contains(err.Error(), "lock: open") {
				t.Fatalf("New: %v: names the lock file, not the cause", err)
			}
		})
	}
	if _, err := os.Stat(missing); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("New created the missing directory: %v", err)
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		t.Fatalf("the directory given as Options.Path is gone (moved aside?): %v", err)
	}
	if _, err := os.Stat(file); err != nil {
		t.Fatalf("a file of the directory given as Options.Path is gone: %v", err)
	}
}

// TestFileOpenHereForgetsShutdown checks that a file a Factory of this
// process closed is no longer named as held by one: a second New after
// Shutdown opens it.
func TestFileOpenHereForgetsShutdown(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cache.db")
	opts := Options{Path: path, Bolt: bolt.Options{Sync: bolt.UnsafeNoSync, Timeout: 10 * time.Millisecond}, ClusterID: "test"}
	first, err := New(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if !fileOpenHere(absPath(path)) {
		t.Fatal("an open file is not recorded")
	}
	if err := first.Shutdown(); err != nil {
		t.Fatal(err)
	}
	if err := first.Shutdown(); err != nil { // idempotent: must not count twice
		t.Fatal(err)
	}
	if fileOpenHere(absPath(path)) {
		t.Fatal("a closed file is still recorded as open")
	}
	second, err := New(context.Background(), opts)
	if err != nil {
		t.Fatalf("New after Shutdown: %v", err)
	}
	if err := second.Shutdown(); err != nil {
		t.Fatal(err)
	}
}
