package kubeserver

import (
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// echoServer accepts connections and echoes what it reads; it counts the
// connections it accepted. Closing a connection it accepted ends it from
// the upstream side.
type echoServer struct {
	ln       net.Listener
	accepted atomic.Int64
	conns    chan net.Conn
}

func startEcho(t *testing.T) *echoServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	e := &echoServer{ln: ln, conns: make(chan net.Conn, 10)}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			e.accepted.Add(1)
			e.conns <- c
			go func() { _, _ = io.Copy(c, c) }()
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		close(e.conns)
		for c := range e.conns {
			_ = c.Close()
		}
	})
	return e
}

func dial(t *testing.T, p *proxy) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// roundTrip writes msg and reads it back within wait; it returns what it
// read and the read's error.
func roundTrip(t *testing.T, c net.Conn, msg string, wait time.Duration) (string, error) {
	t.Helper()
	if _, err := c.Write([]byte(msg)); err != nil {
		t.Fatal(err)
	}
	return read(c, len(msg), wait)
}

func read(c net.Conn, n int, wait time.Duration) (string, error) {
	_ = c.SetReadDeadline(time.Now().Add(wait))
	buf := make([]byte, n)
	k, err := io.ReadFull(c, buf)
	return string(buf[:k]), err
}

func startProxy(t *testing.T, upstream string) *proxy {
	t.Helper()
	p, err := newProxy(upstream)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Shutdown)
	return p
}

func TestProxyHoldsBytesWhileClosed(t *testing.T) {
	e := startEcho(t)
	p := startProxy(t, e.ln.Addr().String())
	c := dial(t, p)
	if got, err := roundTrip(t, c, "open", 5*time.Second); err != nil || got != "open" {
		t.Fatalf("through the open proxy: %q, %v", got, err)
	}
	p.Close()
	if got, err := roundTrip(t, c, "held", 200*time.Millisecond); !errors.Is(err, os.ErrDeadlineExceeded) || got != "" {
		t.Fatalf("through the closed proxy: %q, %v; want nothing before the deadline", got, err)
	}
	p.Open()
	if got, err := read(c, 4, 5*time.Second); err != nil || got != "held" {
		t.Fatalf("after opening: %q, %v; want the held bytes", got, err)
	}
}

func TestProxyDialsNewConnectionsOnlyWhenOpen(t *testing.T) {
	e := startEcho(t)
	p := startProxy(t, e.ln.Addr().String())
	p.Close()
	c := dial(t, p)
	if got, err := roundTrip(t, c, "new", 200*time.Millisecond); !errors.Is(err, os.ErrDeadlineExceeded) || got != "" {
		t.Fatalf("a new connection through the closed proxy: %q, %v; want nothing", got, err)
	}
	if n := e.accepted.Load(); n != 0 {
		t.Fatalf("upstream accepted %d connections while the proxy was closed", n)
	}
	p.Open()
	if got, err := read(c, 3, 5*time.Second); err != nil || got != "new" {
		t.Fatalf("after opening: %q, %v", got, err)
	}
}

// An upstream that goes away while the proxy is closed (an apiserver
// restarted) ends the client's connection only once the proxy opens.
func TestProxyHoldsTheEndOfAConnection(t *testing.T) {
	e := startEcho(t)
	p := startProxy(t, e.ln.Addr().String())
	c := dial(t, p)
	if _, err := roundTrip(t, c, "x", 5*time.Second); err != nil {
		t.Fatal(err)
	}
	p.Close()
	up := <-e.conns
	_ = up.Close()
	if _, err := read(c, 1, 200*time.Millisecond); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read while closed: %v; want the connection held open", err)
	}
	p.Open()
	if _, err := read(c, 1, 5*time.Second); !errors.Is(err, io.EOF) {
		t.Fatalf("read after opening: %v; want EOF", err)
	}
}

// childrenCPU finds a child of this process and counts its CPU time.
func TestChildrenCPU(t *testing.T) {
	cmd := exec.Command("sh", "-c", "i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done; sleep 5")
	if err := cmd.Start(); err != nil {
		t.Skip("no shell:", err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	deadline := time.Now().Add(5 * time.Second)
	for {
		cpu, err := childrenCPU()
		if err == nil && cpu > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("childrenCPU = %v, %v; want the busy child's time", cpu, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
