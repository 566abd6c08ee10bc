package genserver

import "sync"

// Gate holds back watch streams: while it is closed, a stream waits before
// it writes. Server holds its own with one (Hold, Churn, Open); apiproc's
// server holds a real kube-apiserver's streams with another. The zero
// value is open; its methods are safe for concurrent use.
type Gate struct {
	mu sync.Mutex // guards ch
	// ch is nil while the gate is open; while it is closed, a channel
	// closed when it opens.
	ch chan struct{}
}

// Close closes the gate, if it is open.
func (g *Gate) Close() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.ch == nil {
		g.ch = make(chan struct{})
	}
}

// Open opens the gate, releasing what waits, if it is closed.
func (g *Gate) Open() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.ch != nil {
		close(g.ch)
		g.ch = nil
	}
}

// Closed returns nil while the gate is open; while it is closed, a channel
// closed when it opens.
func (g *Gate) Closed() <-chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.ch
}
