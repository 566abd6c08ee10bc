package factory

import (
	"context"
	"testing"
	"time"

	"github.com/warmcache/warmcache/internal/testenv"
)

// shared is the package's etcd and kube-apiserver: started by the first
// test that needs one (realAPIServer), stopped by TestMain after the last
// test.
var shared = testenv.NewShared(testenv.Options{})

// realAPIServer returns the package's shared etcd and kube-apiserver,
// starting them on first use (the first run builds the binaries: minutes),
// and the test's context, bounded. It skips the test under -short.
//
// The tests sharing it may run in parallel: each works in a namespace of
// its own (Env.Namespace) and counts only its own requests (Env.Requests).
// A test that restarts the apiserver starts its own (ownAPIServer).
func realAPIServer(t *testing.T) (context.Context, *testenv.Env) {
	t.Helper()
	ctx := needAPIServer(t)
	return ctx, shared.Env(t)
}

// ownAPIServer starts an etcd and kube-apiserver for the test alone, which
// it may restart; they stop when the test ends. It skips the test under
// -short.
func ownAPIServer(t *testing.T) (context.Context, *testenv.Env) {
	t.Helper()
	ctx := needAPIServer(t)
	env, err := testenv.Start(ctx, t, testenv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return ctx, env
}

// needAPIServer skips under -short and returns the test's context, bounded.
func needAPIServer(t *testing.T) context.Context {
	t.Helper()
	if testing.Short() {
		t.Skip("uses etcd and kube-apiserver (the first run builds them, minutes); runs without -short (make test)")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// listRequests returns how many LIST requests of resource in namespace ns
// the apiserver has received.
func listRequests(ctx context.Context, t *testing.T, env *testenv.Env, resource, ns string) int {
	t.Helper()
	n, err := env.Requests(ctx, testenv.RequestFilter{Verb: "list", Resource: resource, Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	return n
}
