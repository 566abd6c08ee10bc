package soak

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"
)

// echoServer listens on loopback and echoes every connection.
func echoServer(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_, _ = io.Copy(c, c)
			}()
		}
	}()
	return ln
}

func startProxy(t *testing.T, upstream string) *proxy {
	t.Helper()
	p, err := newProxy(upstream)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Error(err)
		}
	})
	return p
}

func dial(t *testing.T, p *proxy) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// roundTrip writes msg and reads it back.
func roundTrip(t *testing.T, c net.Conn, msg string) {
	t.Helper()
	if _, err := c.Write([]byte(msg)); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(msg))
	if _, err := io.ReadFull(c, got); err != nil {
		t.Fatal(err)
	}
	if string(got) != msg {
		t.Fatalf("read %q, want %q", got, msg)
	}
}

func TestProxyForwards(t *testing.T) {
	p := startProxy(t, echoServer(t).Addr().String())
	c := dial(t, p)
	roundTrip(t, c, "hello")
	big := bytes.Repeat([]byte("0123456789"), 20000)
	roundTrip(t, c, string(big))
	if p.Accepted() != 1 {
		t.Errorf("Accepted = %d, want 1", p.Accepted())
	}
}

func TestProxyCut(t *testing.T) {
	p := startProxy(t, echoServer(t).Addr().String())
	c := dial(t, p)
	roundTrip(t, c, "before")
	if n := p.Cut(); n != 1 {
		t.Errorf("Cut = %d connections, want 1", n)
	}
	if _, err := c.Read(make([]byte, 1)); err == nil {
		t.Error("a cut connection still reads")
	}
	roundTrip(t, dial(t, p), "after")
}

func TestProxyStall(t *testing.T) {
	p := startProxy(t, echoServer(t).Addr().String())
	c := dial(t, p)
	roundTrip(t, c, "before")
	p.Stall()
	if _, err := c.Write([]byte("held")); err != nil {
		t.Fatal(err)
	}
	// Nothing may arrive while stalled: a short deadline shows it.
	if err := c.SetReadDeadline(time.Now().Add(100 * time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	if n, err := c.Read(make([]byte, 4)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read %d bytes (%v) while stalled", n, err)
	}
	if err := c.SetReadDeadline(time.Time{}); err != nil {
		t.Fatal(err)
	}
	p.Resume()
	got := make([]byte, 4)
	if _, err := io.ReadFull(c, got); err != nil || string(got) != "held" {
		t.Fatalf("after Resume read %q, %v", got, err)
	}
}

func TestProxyTruncate(t *testing.T) {
	p := startProxy(t, echoServer(t).Addr().String())
	c := dial(t, p)
	roundTrip(t, c, "before")
	if n := p.Truncate(10); n != 1 {
		t.Errorf("Truncate = %d connections, want 1", n)
	}
	msg := bytes.Repeat([]byte("x"), 1000)
	if _, err := c.Write(msg); err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(c)
	if len(got) != 10 {
		t.Errorf("read %d bytes (%v) through a truncated connection, want 10", len(got), err)
	}
	roundTrip(t, dial(t, p), "after")
}

func TestProxyUpstreamDown(t *testing.T) {
	ln := echoServer(t)
	addr := ln.Addr().String()
	ln.Close()
	p := startProxy(t, addr)
	c := dial(t, p)
	if _, err := c.Read(make([]byte, 1)); err == nil {
		t.Error("a connection to a stopped upstream reads")
	}
}
