package kubeserver

import (
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"time"
)

// proxy forwards TCP connections to an upstream address and can hold them
// back: while it is closed, no byte goes through in either direction, a
// new connection waits before it is dialled upstream, and a connection
// whose other end ended stays open until the proxy opens. The informers
// under test reach kube-apiserver through it, so that the updates a relist
// must find are made while their watches hear nothing, as the fake
// servers' held-back streams do.
//
// Bytes are spliced by the kernel (io.Copy between TCP connections); a
// copy is interrupted by a read deadline in the past when the proxy
// closes.
type proxy struct {
	ln       net.Listener
	upstream string

	// mu guards the fields below.
	mu     sync.Mutex
	closed bool
	// opened is closed when the proxy opens; a new one is made when it
	// closes.
	opened chan struct{}
	// conns are the connections being read from, whose copies a close
	// interrupts.
	conns map[*net.TCPConn]struct{}
	done  bool // shut down
}

// newProxy listens on a loopback port and forwards to upstream, open.
func newProxy(upstream string) (*proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &proxy{ln: ln, upstream: upstream, opened: make(chan struct{}), conns: map[*net.TCPConn]struct{}{}}
	close(p.opened)
	go p.accept()
	return p, nil
}

// Addr returns the address the proxy listens on.
func (p *proxy) Addr() string { return p.ln.Addr().String() }

// pastDeadline ends a blocked read at once.
var pastDeadline = time.Unix(1, 0)

// Close holds back every connection until Open.
func (p *proxy) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || p.done {
		return
	}
	p.closed = true
	p.opened = make(chan struct{})
	for c := range p.conns {
		_ = c.SetReadDeadline(pastDeadline)
	}
}

// Open lets the connections through again.
func (p *proxy) Open() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		p.closed = false
		close(p.opened)
	}
}

// Shutdown stops accepting, opens and ends every connection.
func (p *proxy) Shutdown() {
	_ = p.ln.Close()
	p.Open()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done = true
	for c := range p.conns {
		_ = c.Close()
	}
}

// waitOpen returns once the proxy is open.
func (p *proxy) waitOpen() {
	p.mu.Lock()
	ch := p.opened
	p.mu.Unlock()
	<-ch
}

// resume waits until the proxy is open, then lets reads from src block
// again and records it, so that a close interrupts them. It returns false
// once the proxy is shut down.
func (p *proxy) resume(src *net.TCPConn) bool {
	for {
		p.mu.Lock()
		if p.done {
			p.mu.Unlock()
			return false
		}
		if !p.closed {
			_ = src.SetReadDeadline(time.Time{})
			p.conns[src] = struct{}{}
			p.mu.Unlock()
			return true
		}
		ch := p.opened
		p.mu.Unlock()
		<-ch
	}
}

func (p *proxy) forget(c *net.TCPConn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.conns, c)
}

func (p *proxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		go p.serve(c.(*net.TCPConn))
	}
}

func (p *proxy) serve(client *net.TCPConn) {
	p.waitOpen()
	up, err := net.Dial("tcp", p.upstream)
	if err != nil {
		_ = client.Close()
		return
	}
	upstream := up.(*net.TCPConn)
	var wg sync.WaitGroup
	wg.Go(func() { p.pipe(upstream, client) })
	wg.Go(func() { p.pipe(client, upstream) })
	wg.Wait()
}

// pipe copies src to dst until either ends, pausing while the proxy is
// closed; then, once it is open, it closes both.
func (p *proxy) pipe(dst, src *net.TCPConn) {
	defer func() {
		p.forget(src)
		p.waitOpen()
		_ = src.Close()
		_ = dst.Close()
	}()
	for p.resume(src) {
		_, err := io.Copy(dst, src)
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			return
		}
	}
}
