package cli

import (
	"bytes"
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// syncBuffer is a bytes.Buffer safe for the server's goroutine and the
// test's.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// serving is a snapshot serve command running in this process.
type serving struct {
	cfg    *rest.Config
	stderr *syncBuffer
	stop   func() int
}

// startServe runs snapshot serve with args (the kubeconfig written to a
// file of the test) until stop, and returns the client config of the
// kubeconfig it wrote.
func startServe(t *testing.T, args ...string) *serving {
	t.Helper()
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	ctx, cancel := context.WithCancel(context.Background())
	var stdout, stderr syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- Run(ctx, Env{Stdout: &stdout, Stderr: &stderr, Now: func() time.Time { return testNow }}, append(args, "--kubeconfig", kc))
	}()
	s := &serving{stderr: &stderr}
	var code *int
	s.stop = func() int {
		if code == nil {
			cancel()
			c := <-done
			code = &c
		}
		return *code
	}
	t.Cleanup(func() { s.stop() })
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(stderr.String(), "Serving ") {
		select {
		case c := <-done:
			t.Fatalf("serve ended with exit %d:\n%s", c, stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve did not start:\n%s", stderr.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kc)
	if err != nil {
		t.Fatal(err)
	}
	s.cfg = cfg
	return s
}

// TestServe serves the fixture and reads it with client-go: discovery,
// typed and dynamic lists of a namespaced, a cluster-scoped and a custom
// resource, and the end of the command on cancel (exit code 0).
func TestServe(t *testing.T) {
	path := fixture(t, fixtureOptions{})
	unchanged(t, path)
	s := startServe(t, "serve", path)
	ctx := context.Background()
	cs := kubernetes.NewForConfigOrDie(s.cfg)
	pods, err := cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	if err != nil || len(pods.Items) != 6 || pods.ResourceVersion != "6" {
		t.Fatalf("pods: %v, %d items, rv %q", err, len(pods.Items), pods.ResourceVersion)
	}
	if nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{}); err != nil || len(nodes.Items) != 2 {
		t.Errorf("nodes: %v", err)
	}
	dyn := dynamic.NewForConfigOrDie(s.cfg)
	widgets, err := dyn.Resource(schema.GroupVersionResource{Group: "example.com", Version: "v1alpha1", Resource: "widgets"}).Namespace("lab").List(ctx, metav1.ListOptions{})
	if err != nil || len(widgets.Items) != 2 || widgets.Items[0].GetKind() != "Widget" {
		t.Fatalf("widgets: %v", err)
	}
	dc := discovery.NewDiscoveryClientForConfigOrDie(s.cfg)
	res, err := dc.ServerResourcesForGroupVersion("apps/v1")
	if err != nil || len(res.APIResources) != 1 || res.APIResources[0].Name != "deployments" || !res.APIResources[0].Namespaced ||
		strings.Join(res.APIResources[0].ShortNames, ",") != "deploy" || strings.Join(res.APIResources[0].Categories, ",") != "all" {
		t.Fatalf("apps/v1: %v %+v", err, res)
	}
	if code := s.stop(); code != ExitOK {
		t.Errorf("exit %d on stop:\n%s", code, s.stderr.String())
	}
}

// TestServeSealed: a sealed resource is forbidden without --key-file, and
// served with it.
func TestServeSealed(t *testing.T) {
	path, keyFile, _ := sealedFixture(t, 2, "7")
	s := startServe(t, "serve", path)
	_, err := kubernetes.NewForConfigOrDie(s.cfg).CoreV1().Secrets("prod").List(context.Background(), metav1.ListOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "--key-file") {
		t.Errorf("without a key: %v", err)
	}
	s.stop()
	s = startServe(t, "--key-file", keyFile, "serve", path)
	sec, err := kubernetes.NewForConfigOrDie(s.cfg).CoreV1().Secrets("prod").Get(context.Background(), "db-a", metav1.GetOptions{})
	if err != nil || !bytes.Equal(sec.Data["password"], cliSecretValue) {
		t.Errorf("with the key: %v", err)
	}
}

// TestServeAddress: off loopback only with a token, then over TLS with a
// certificate the kubeconfig trusts.
func TestServeAddress(t *testing.T) {
	path := fixture(t, fixtureOptions{podsOnly: true})
	r := run(t, "serve", path, "--address", "0.0.0.0:0")
	if r.code != ExitUsage || !strings.Contains(r.stderr, "needs a token") {
		t.Fatalf("off loopback without a token: exit %d\n%s", r.code, r.stderr)
	}
	var ip net.IP
	if addrs, err := net.InterfaceAddrs(); err == nil {
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() && n.IP.To4() != nil {
				ip = n.IP
				break
			}
		}
	}
	if ip == nil {
		t.Skip("no non-loopback IPv4 address to serve on")
	}
	token := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(token, []byte("t0ken\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := startServe(t, "serve", path, "--address", net.JoinHostPort(ip.String(), "0"), "--token-file", token)
	if !strings.HasPrefix(s.cfg.Host, "https://") || s.cfg.BearerToken != "t0ken" || len(s.cfg.CAData) == 0 {
		t.Fatalf("kubeconfig: host %q, token %q, CA %d bytes", s.cfg.Host, s.cfg.BearerToken, len(s.cfg.CAData))
	}
	if pods, err := kubernetes.NewForConfigOrDie(s.cfg).CoreV1().Pods("").List(context.Background(), metav1.ListOptions{}); err != nil || len(pods.Items) != 6 {
		t.Errorf("list over TLS: %v", err)
	}
	anon := rest.CopyConfig(s.cfg)
	anon.BearerToken = ""
	if _, err := kubernetes.NewForConfigOrDie(anon).CoreV1().Pods("").List(context.Background(), metav1.ListOptions{}); !apierrors.IsUnauthorized(err) {
		t.Errorf("without the token: %v", err)
	}
}
