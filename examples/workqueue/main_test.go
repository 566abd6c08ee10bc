package main

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/warmcache/warmcache/internal/fakeapi"
	"github.com/warmcache/warmcache/internal/fakesource"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// TestRunRestartsWarm runs the example twice on one cache file against a
// fake apiserver: each run reconciles every pod, the second without a
// LIST, and a pod deleted while it runs is reconciled as gone.
func TestRunRestartsWarm(t *testing.T) {
	src, err := fakesource.New(fakesource.Options{})
	if err != nil {
		t.Fatal(err)
	}
	pods := make([]*corev1.Pod, 3)
	for i := range pods {
		pods[i] = &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: fmt.Sprintf("web-%d", i)}}
		if _, err := src.Add(pods[i]); err != nil {
			t.Fatal(err)
		}
	}
	srv, err := fakeapi.Start(t.Context(), fakeapi.Options{Source: src})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	o := options{cacheFile: filepath.Join(t.TempDir(), "pods.db"), workers: 2}

	for i, start := range []string{"cold", "warm"} {
		rec := newRecorder()
		ctx, cancel := context.WithTimeout(logr.NewContext(t.Context(), logr.New(rec)), time.Minute)
		done := make(chan error, 1)
		go func() { done <- run(ctx, srv.Config(""), o) }()
		rec.waitFor(ctx, t, "Pod", "default/web-0", "default/web-1", "default/web-2")
		if i == 1 {
			if _, err := src.Delete(pods[0]); err != nil {
				t.Fatal(err)
			}
			rec.waitFor(ctx, t, "Pod deleted", "default/web-0")
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatalf("%s run: %v", start, err)
		}
	}
	// The cold start's list, and the warm start's resume check (a LIST of
	// at most one object reading the server's resourceVersion).
	if st := src.Stats(); st.Lists+st.WatchLists != 2 {
		t.Errorf("%d LIST and WatchList requests over a cold and a warm start, want 2", st.Lists+st.WatchLists)
	}
}

// recorder is a logr.LogSink that records the pods of reconcile's log
// lines, by message.
type recorder struct {
	mu      sync.Mutex // guards the fields below
	seen    map[string]map[string]bool
	changed chan struct{} // closed and replaced on every line
}

func newRecorder() *recorder {
	return &recorder{seen: map[string]map[string]bool{}, changed: make(chan struct{})}
}

func (r *recorder) Info(_ int, msg string, kv ...interface{}) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i] == "pod" {
			if r.seen[msg] == nil {
				r.seen[msg] = map[string]bool{}
			}
			r.seen[msg][fmt.Sprint(kv[i+1])] = true
		}
	}
	close(r.changed)
	r.changed = make(chan struct{})
}

// waitFor waits until a line msg was logged for each pod.
func (r *recorder) waitFor(ctx context.Context, t *testing.T, msg string, pods ...string) {
	t.Helper()
	for {
		r.mu.Lock()
		missing := 0
		for _, p := range pods {
			if !r.seen[msg][p] {
				missing++
			}
		}
		changed := r.changed
		r.mu.Unlock()
		if missing == 0 {
			return
		}
		select {
		case <-changed:
		case <-ctx.Done():
			t.Fatalf("%q logged for %d of %v: %v", msg, len(pods)-missing, pods, context.Cause(ctx))
		}
	}
}

func (r *recorder) Init(logr.RuntimeInfo)                  {}
func (r *recorder) Enabled(int) bool                       { return true }
func (r *recorder) Error(error, string, ...interface{})    {}
func (r *recorder) WithValues(...interface{}) logr.LogSink { return r }
func (r *recorder) WithName(string) logr.LogSink           { return r }
