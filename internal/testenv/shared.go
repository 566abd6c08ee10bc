package testenv

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"
)

// sharedStartTimeout bounds the start of a shared environment, a first
// build of the binaries included.
const sharedStartTimeout = 20 * time.Minute

// Shared is one etcd and kube-apiserver for a package's tests: the first
// test that calls Env starts it, and Run stops it after the last test, so a
// package whose tests do not need it (-short, -run) starts nothing.
//
// The tests sharing it may run in parallel: each works in a namespace of its
// own (Namespace), counts its requests in that namespace (Env.Requests),
// and leaves the processes alone. An Env that Shared returns refuses
// whatever would disturb the other tests (RestartAPIServer, Compact,
// SaveEtcdData, RestartWithEtcdData: ErrShared) and ignores Stop. A test
// that needs one of those, other apiserver flags, or the server's global
// counters to itself starts its own environment with Start.
//
// Use it from TestMain:
//
//	var shared = testenv.NewShared(testenv.Options{})
//
//	func TestMain(m *testing.M) { os.Exit(shared.Run(m)) }
//
// or, with goleak, goleak.VerifyTestMain(shared.Wrap(m)), which looks for
// leaked goroutines after the environment stopped.
type Shared struct {
	opts Options

	once sync.Once // starts env
	env  *Env
	err  error
}

// NewShared returns a Shared that starts its environment with opts on
// first use.
func NewShared(opts Options) *Shared { return &Shared{opts: opts} }

// Env returns the shared environment, starting it on first use (the first
// run builds the binaries: minutes); it fails tb if the environment cannot
// start. When tb fails, the tails of the process logs are printed.
func (s *Shared) Env(tb testing.TB) *Env {
	tb.Helper()
	s.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), sharedStartTimeout)
		defer cancel()
		s.env, s.err = Start(ctx, nil, s.opts)
		if s.err == nil {
			s.env.shared = true
		}
	})
	if s.err != nil {
		tb.Fatalf("start the shared kube-apiserver and etcd: %v", s.err)
	}
	env := s.env
	tb.Cleanup(func() {
		if tb.Failed() {
			tb.Logf("testenv: shared environment's process logs in %s\n%s", env.Dir(), env.LogTails())
		}
	})
	return env
}

// Stop stops the environment, if a test started it.
func (s *Shared) Stop() {
	if s.env != nil {
		s.env.stop()
	}
}

// Run runs the tests, then stops the environment, and returns m.Run's exit
// code.
func (s *Shared) Run(m interface{ Run() int }) int {
	defer s.Stop()
	return m.Run()
}

// Wrap returns m with Run stopping the environment after the tests, for
// goleak.VerifyTestMain(shared.Wrap(m)).
func (s *Shared) Wrap(m interface{ Run() int }) interface{ Run() int } {
	return runner(func() int { return s.Run(m) })
}

type runner func() int

func (r runner) Run() int { return r() }

// Namespace creates a namespace named prefix-<generated> and returns its
// name: tests sharing an environment, and their repeats (-count), never
// meet. It fails tb if the namespace cannot be created. The namespace is
// left behind (no controller manager would finish deleting it).
func (e *Env) Namespace(ctx context.Context, tb testing.TB, prefix string) string {
	tb.Helper()
	name, err := e.createNamespace(ctx, prefix)
	if err != nil {
		tb.Fatal(err)
	}
	return name
}

func (e *Env) createNamespace(ctx context.Context, prefix string) (string, error) {
	if _, _, err := e.processes(); err != nil {
		return "", fmt.Errorf("create namespace: %w", err)
	}
	body, err := json.Marshal(map[string]any{
		"apiVersion": "v1", "kind": "Namespace",
		"metadata": map[string]any{"generateName": prefix + "-"},
	})
	if err != nil {
		return "", fmt.Errorf("create namespace: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.config.Host+"/api/v1/namespaces", bytes.NewReader(body))
	if err != nil {
		return "", fmt.Errorf("create namespace: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := e.client.Do(req)
	if err != nil {
		return "", fmt.Errorf("create namespace %s-*: %w", prefix, err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return "", fmt.Errorf("create namespace %s-*: %w", prefix, err)
	}
	if resp.StatusCode != http.StatusCreated {
		return "", fmt.Errorf("create namespace %s-*: %s: %s", prefix, resp.Status, out)
	}
	var ns struct {
		Metadata struct {
			Name string `json:"name"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(out, &ns); err != nil || ns.Metadata.Name == "" {
		return "", fmt.Errorf("create namespace %s-*: unexpected answer %s (%v)", prefix, out, err)
	}
	return ns.Metadata.Name, nil
}
