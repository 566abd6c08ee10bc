package informerbench

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/warmcache/warmcache/benchmarks/internal/apiproc"
	"github.com/warmcache/warmcache/benchmarks/internal/measure"
)

// ServerCPU is the CPU time the server process used during a phase.
type ServerCPU struct {
	// CPU is its user and system time; Known is false where /proc could
	// not be read.
	CPU   time.Duration
	Known bool
}

// meter measures one phase: this process's wall-clock and CPU time and
// collections, and the server process's CPU time.
type meter struct {
	sw      measure.Stopwatch
	srv     Server
	gc0     measure.GC
	server0 time.Duration
	err0    error
	// Set by stop.
	gc     measure.GC
	server ServerCPU
}

func startMeter(srv Server) *meter {
	m := &meter{srv: srv}
	m.server0, m.err0 = srv.CPU()
	m.gc0 = measure.ReadGC()
	m.sw.StartTimer()
	return m
}

func (m *meter) stop() {
	m.sw.StopTimer()
	m.gc = measure.ReadGC().Sub(m.gc0)
	if cpu, err := m.srv.CPU(); err == nil && m.err0 == nil {
		m.server = ServerCPU{CPU: cpu - m.server0, Known: true}
	}
}

// Served is one stream the server served alone.
type Served struct {
	// Events were read in Elapsed, from the request (the release of the
	// held-back stream for a churn) to the last one.
	Events  int
	Bytes   int64
	Elapsed time.Duration
	Server  ServerCPU
}

// PerSec returns the events served per second.
func (s Served) PerSec() float64 { return measure.PerSecond(s.Events, s.Elapsed) }

// ServerAlone is what the server costs with a client that only splits the
// frames of its watch streams, decoding nothing: the ceiling it sets on
// the informers' figures.
type ServerAlone struct {
	// Initial is a WatchList of every pod, up to its closing bookmark.
	Initial Served
	// Churn is the backlog of a churn of updates, read from a watch from
	// the resourceVersion before it once the server releases it.
	Churn Served
	// ChurnHot is the hot set the churn's updates cycled over; 0 for
	// every pod.
	ChurnHot int
}

// MeasureServerAlone measures the server of n pods alone: a WatchList of
// them, then a churn of updates updates (generation gen; over a hot set of
// hot pods if hot > 0, as Churn) read from a watch, each in contentType
// (default protobuf). It compacts the server's history afterwards.
func MeasureServerAlone(ctx context.Context, proc *apiproc.Process, n, updates, gen, hot int, contentType string) (ServerAlone, error) {
	a := ServerAlone{ChurnHot: hot}
	if n <= 0 || updates <= 0 || gen <= 0 || hot < 0 || hot > n {
		return a, fmt.Errorf("%w: server alone with %d pods, %d updates, generation %d, hot set of %d pods", ErrInvalidArgument, n, updates, gen, hot)
	}
	if contentType == "" {
		contentType = ProtobufContentType
	}
	m := startMeter(proc)
	st, err := apiproc.ReadStream(ctx, nil, proc.URL, apiproc.WatchListQuery, contentType, n+1)
	if err != nil {
		return a, fmt.Errorf("informerbench: server alone: %w", err)
	}
	m.stop()
	a.Initial = Served{Events: n, Bytes: st.Bytes, Elapsed: st.Elapsed, Server: m.server}

	before, err := proc.Stats(ctx)
	if err != nil {
		return a, err
	}
	if _, err := proc.Churn(ctx, updates, gen, hot); err != nil {
		return a, errors.Join(err, proc.Open(ctx))
	}
	type result struct {
		st  apiproc.Stream
		err error
	}
	read := make(chan result, 1)
	readCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		st, err := apiproc.ReadStream(readCtx, nil, proc.URL, apiproc.WatchFromQuery(before.ResourceVersion), contentType, updates)
		read <- result{st, err}
	}()
	m = startMeter(proc)
	if err := proc.Open(ctx); err != nil {
		cancel()
		<-read
		return a, err
	}
	r := <-read
	if r.err != nil {
		return a, fmt.Errorf("informerbench: server alone: churn: %w", r.err)
	}
	m.stop()
	a.Churn = Served{Events: updates, Bytes: r.st.Bytes, Elapsed: m.sw.Elapsed(), Server: m.server}
	return a, proc.Compact(ctx, "")
}
