package crcache

import (
	"context"
	"errors"
	"path/filepath"
	"sort"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/warmcache/warmcache/factory"
	"github.com/warmcache/warmcache/internal/testenv"
	"github.com/warmcache/warmcache/store/bolt/inspect"
	"github.com/warmcache/warmcache/store/seal"
)

// TestMetadataSecretsWarmStart: metadata-only Secrets in two namespaces
// persist; a second cache on the same file lists no Secrets from the
// apiserver (no WatchList stream; one resume-check LIST of at most one
// object per informer) and returns the current
// Secrets, including one created while it was down. A manager given an
// option crcache cannot serve fails to build.
func TestMetadataSecretsWarmStart(t *testing.T) {
	t.Parallel()
	ctx, env, cs := startEnv(t)
	nss := seed(ctx, t, env, cs)
	s := newScheme(t)
	path := filepath.Join(t.TempDir(), "cache.db")
	opts := cache.Options{Scheme: s, DefaultNamespaces: map[string]cache.Config{nss.a: {}, nss.c: {}}}
	newList := func() *metav1.PartialObjectMetadataList {
		l := &metav1.PartialObjectMetadataList{}
		l.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("SecretList"))
		return l
	}
	names := func(c cache.Cache) []string {
		l := newList()
		if err := c.List(ctx, l); err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, m := range l.Items {
			if m.Kind != "Secret" || m.APIVersion != "v1" {
				t.Errorf("item %s/%s has TypeMeta %v", m.Namespace, m.Name, m.TypeMeta)
			}
			out = append(out, m.Namespace+"/"+m.Name)
		}
		sort.Strings(out)
		return out
	}
	// Secrets persist only sealed: without a key they stay in memory.
	key, err := seal.NewKey([]byte("0123456789abcdef0123456789abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	open := func() cache.Cache {
		c, err := NewCache(Options{Factory: factory.Options{Path: path, Keys: seal.Static(key)}})(env.RestConfig(), opts)
		if err != nil {
			t.Fatal(err)
		}
		// The informer exists before Start, as a controller's watch
		// creates it.
		m := &metav1.PartialObjectMetadata{}
		m.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
		if _, err := c.GetInformer(ctx, m); err != nil {
			t.Fatal(err)
		}
		return run(ctx, t, c)
	}
	first := open()
	if got := names(first); len(got) != 8 {
		t.Fatalf("cold: %d Secrets %v, want the 8 of a and c", len(got), got)
	}
	first.(*running).stop(t)
	create(ctx, t, cs, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: nss.c, Name: "new"}})
	// The requests of the test's namespaces: other tests share the
	// apiserver.
	requests := func(verb string) int {
		t.Helper()
		n := 0
		for _, ns := range []string{nss.a, nss.c} {
			m, err := env.Requests(ctx, testenv.RequestFilter{Verb: verb, Resource: "secrets", Namespace: ns})
			if err != nil {
				t.Fatal(err)
			}
			n += m
		}
		return n
	}
	lists0, streams0 := requests("list"), requests("watchlist")
	second := open()
	var got []string
	// The watch delivers c/new after the sync: an external event, polled
	// with a deadline.
	_ = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		got = names(second)
		return len(got) == 9, nil
	})
	if len(got) != 9 || got[len(got)-1] != nss.c+"/s-3" || got[4] != nss.c+"/new" {
		t.Errorf("warm: Secrets %v, want the 8 and c/new", got)
	}
	lists, streams := requests("list"), requests("watchlist")
	// Nothing but the resume check of each of the two informers (one LIST
	// of at most one object each, package reflector), and no WatchList
	// request, completed or not.
	if lists != lists0+2 || streams != streams0 {
		t.Errorf("the warm cache made %d LIST requests and %d WatchList requests of secrets, want the 2 resume checks and no stream", lists-lists0, streams-streams0)
	}
	second.(*running).stop(t)

	// A manager with options crcache cannot serve does not start.
	_, err = ctrl.NewManager(env.RestConfig(), ctrl.Options{
		Scheme:   s,
		Cache:    cache.Options{DefaultNamespaces: map[string]cache.Config{"": {}, nss.a: {}}},
		NewCache: NewCache(Options{Factory: factory.Options{Path: path}}),
		Metrics:  metricsserver.Options{BindAddress: "0"},
	})
	if !errors.Is(err, ErrUnsupported) {
		t.Errorf("NewManager with the all-namespaces key = %v, want an error wrapping ErrUnsupported", err)
	}
	for _, in := range resources(ctx, t, path) {
		if in.Identity.Kind != factory.MetadataKind || in.State != inspect.StateComplete {
			t.Errorf("resource %+v state %s, want metadata-only, complete", in.Identity, in.State)
		}
	}
}
