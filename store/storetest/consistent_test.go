package storetest_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/warmcache/warmcache/internal/podgen"
	"github.com/warmcache/warmcache/store"
	"github.com/warmcache/warmcache/store/memory"
	"github.com/warmcache/warmcache/store/storetest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// recorder is a testing.TB that records errors instead of failing.
type recorder struct {
	testing.TB
	errors []string
}

func (r *recorder) Helper() {}

func (r *recorder) Errorf(format string, args ...interface{}) {
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}

// lying wraps a store and corrupts one read path.
type lying struct {
	store.Store
	listIndexFuncValues func([]string) []string
	indexKeys           func([]string) []string
	byIndex             func([]interface{}) []interface{}
	scanReversed        bool
	extraObjects        int
}

func (l lying) ListIndexFuncValues(name string) []string {
	v := l.Store.ListIndexFuncValues(name)
	if l.listIndexFuncValues != nil {
		return l.listIndexFuncValues(v)
	}
	return v
}

func (l lying) IndexKeys(name, value string) ([]string, error) {
	k, err := l.Store.IndexKeys(name, value)
	if l.indexKeys != nil {
		return l.indexKeys(k), err
	}
	return k, err
}

func (l lying) ByIndex(name, value string) ([]interface{}, error) {
	objs, err := l.Store.ByIndex(name, value)
	if l.byIndex != nil {
		return l.byIndex(objs), err
	}
	return objs, err
}

func (l lying) Scan(ctx context.Context, fn store.ScanFunc) error {
	if !l.scanReversed {
		return l.Store.Scan(ctx, fn)
	}
	type kv struct {
		k string
		o interface{}
	}
	var all []kv
	if err := l.Store.Scan(ctx, func(k string, o interface{}) error { all = append(all, kv{k, o}); return nil }); err != nil {
		return err
	}
	slices.Reverse(all)
	for _, e := range all {
		if err := fn(e.k, e.o); err != nil {
			return err
		}
	}
	return nil
}

func (l lying) State() (store.State, error) {
	st, err := l.Store.State()
	st.Objects += l.extraObjects
	return st, err
}

func TestCheckConsistentDetects(t *testing.T) {
	cases := []struct {
		name  string
		lie   func(lying) lying
		wants bool
	}{
		{"healthy store", func(l lying) lying { return l }, false},
		{"leftover index value", func(l lying) lying {
			l.listIndexFuncValues = func(v []string) []string { return append(v, "ghost") }
			return l
		}, true},
		{"key missing from an index", func(l lying) lying {
			l.indexKeys = func(k []string) []string { return k[:len(k)-1] }
			return l
		}, true},
		{"stale object in an index", func(l lying) lying {
			l.byIndex = func(objs []interface{}) []interface{} {
				stale := objs[0].(*corev1.Pod).DeepCopy()
				stale.ResourceVersion = "stale"
				return append([]interface{}{stale}, objs[1:]...)
			}
			return l
		}, true},
		{"scan out of order", func(l lying) lying { l.scanReversed = true; return l }, true},
		{"object count", func(l lying) lying { l.extraObjects = 1; return l }, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, err := memory.New(memory.Options{Indexers: cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			for _, p := range podgen.Pods(20) {
				if err := s.Add(p); err != nil {
					t.Fatal(err)
				}
			}
			rec := &recorder{TB: t}
			storetest.CheckConsistent(rec, tc.lie(lying{Store: s}))
			if got := len(rec.errors) > 0; got != tc.wants {
				t.Errorf("CheckConsistent reported %q; want errors: %v", rec.errors, tc.wants)
			}
		})
	}
}
