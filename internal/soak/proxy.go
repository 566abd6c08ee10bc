package soak

import (
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// proxy forwards the TCP connections made to its loopback port to the
// apiserver, byte for byte: TLS passes through it end to end, so the
// controller verifies the apiserver's certificate as without it. It
// injects the stream faults at byte boundaries: Cut closes every
// connection, Stall stops every byte until Resume, Truncate forwards only
// the first bytes of what the server sends next on each connection (a
// TLS record, an HTTP/2 frame, a watch event cut in the middle) and then
// closes it.
type proxy struct {
	ln       net.Listener
	upstream string
	wg       sync.WaitGroup
	accepted atomic.Int64 // connections forwarded

	// mu guards the fields below.
	mu      sync.Mutex
	conns   map[*proxyConn]struct{}
	stalled chan struct{} // non-nil while stalled; closed by Resume
	closed  bool
}

// proxyConn is one forwarded connection.
type proxyConn struct {
	client, server net.Conn
	closeOnce      sync.Once
	done           chan struct{} // closed by close

	// mu guards truncate.
	mu       sync.Mutex
	truncate int // > 0: bytes still forwarded to the client before the cut
}

// dialTimeout bounds the proxy's dial of the apiserver.
const dialTimeout = 5 * time.Second

// newProxy listens on a free loopback port and forwards to upstream
// (host:port).
func newProxy(upstream string) (*proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("soak: proxy: listen: %w", err)
	}
	p := &proxy{ln: ln, upstream: upstream, conns: map[*proxyConn]struct{}{}}
	p.wg.Go(p.accept)
	return p, nil
}

// Addr returns the proxy's host:port.
func (p *proxy) Addr() string { return p.ln.Addr().String() }

func (p *proxy) accept() {
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return // closed
		}
		p.wg.Go(func() { p.forward(client) })
	}
}

func (p *proxy) forward(client net.Conn) {
	server, err := net.DialTimeout("tcp", p.upstream, dialTimeout)
	if err != nil {
		client.Close() // the apiserver is down: the client sees a reset
		return
	}
	c := &proxyConn{client: client, server: server, done: make(chan struct{})}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		c.close()
		return
	}
	p.conns[c] = struct{}{}
	p.accepted.Add(1)
	p.mu.Unlock()
	var wg sync.WaitGroup
	wg.Go(func() { p.pipe(c, c.server, c.client, false) })
	wg.Go(func() { p.pipe(c, c.client, c.server, true) })
	wg.Wait()
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
}

// pipe copies from src to dst until either side ends, holding each chunk
// while the proxy is stalled; toClient applies the connection's
// truncation.
func (p *proxy) pipe(c *proxyConn, dst, src net.Conn, toClient bool) {
	defer c.close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if !p.waitStall(c) {
				return
			}
			chunk, cut := buf[:n], false
			if toClient {
				chunk, cut = c.take(chunk)
			}
			if _, werr := dst.Write(chunk); werr != nil || cut {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// take returns the part of chunk forwarded under the connection's
// truncation, and whether the connection is to be cut after it.
func (c *proxyConn) take(chunk []byte) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.truncate <= 0:
		return chunk, false
	case len(chunk) >= c.truncate:
		return chunk[:c.truncate], true
	default:
		c.truncate -= len(chunk)
		return chunk, false
	}
}

// waitStall waits while the proxy is stalled; false if the connection
// closed meanwhile.
func (p *proxy) waitStall(c *proxyConn) bool {
	p.mu.Lock()
	stalled := p.stalled
	p.mu.Unlock()
	if stalled == nil {
		return true
	}
	select {
	case <-stalled:
		return true
	case <-c.done:
		return false
	}
}

func (c *proxyConn) close() {
	c.closeOnce.Do(func() {
		close(c.done)
		c.client.Close()
		c.server.Close()
	})
}

// Cut closes every open connection and returns how many.
func (p *proxy) Cut() int {
	p.mu.Lock()
	conns := make([]*proxyConn, 0, len(p.conns))
	for c := range p.conns {
		conns = append(conns, c)
	}
	p.mu.Unlock()
	for _, c := range conns {
		c.close()
	}
	return len(conns)
}

// Stall holds every byte of every connection, open or new, until Resume.
func (p *proxy) Stall() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stalled == nil {
		p.stalled = make(chan struct{})
	}
}

// Resume ends a Stall.
func (p *proxy) Resume() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stalled != nil {
		close(p.stalled)
		p.stalled = nil
	}
}

// Truncate has each open connection forward n more bytes (n > 0) from the
// server to the client, then cut; it returns how many connections.
func (p *proxy) Truncate(n int) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		c.mu.Lock()
		c.truncate = n
		c.mu.Unlock()
	}
	return len(p.conns)
}

// Accepted returns how many connections the proxy has forwarded.
func (p *proxy) Accepted() int { return int(p.accepted.Load()) }

// Close stops listening, cuts every connection and waits for the
// forwarding goroutines.
func (p *proxy) Close() error {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	err := p.ln.Close()
	p.Resume()
	p.Cut()
	p.wg.Wait()
	if errors.Is(err, net.ErrClosed) {
		err = nil
	}
	return err
}

var _ io.Closer = (*proxy)(nil)
