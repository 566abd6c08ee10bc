package democtl

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/util/wait"
)

// Stats is what one run of the controller measured. It is written as JSON
// to Config.StatsFile.
type Stats struct {
	// WarmStart is true when the cache file held a complete cache at
	// start: the informer replayed it and resumed the watch.
	WarmStart bool `json:"warmStart"`
	// SyncedSeconds is the time from Run's start until the informer had
	// synced and the handler had received every initial event; 0 if it
	// never synced.
	SyncedSeconds float64 `json:"syncedSeconds"`
	// Events counts the events delivered to the handler, by type.
	Events EventCounts `json:"events"`
	// Reconciles is the number of keys the workers processed.
	Reconciles int64 `json:"reconciles"`
	// Objects is the number of objects in the cache when Run returned.
	Objects int `json:"objects"`
	// ListRequests, WatchRequests and WatchListRequests are the requests
	// the informer's reflector sent (each LIST page is one request), from
	// the informer's metrics; Relists counts relists begun and Resumes
	// warm starts that resumed the watch.
	ListRequests      int64 `json:"listRequests"`
	WatchRequests     int64 `json:"watchRequests"`
	WatchListRequests int64 `json:"watchListRequests"`
	Relists           int64 `json:"relists"`
	Resumes           int64 `json:"resumes"`
	// BytesReceived is the response body bytes the controller's clients
	// read, as delivered by the HTTP transport (after decompression).
	BytesReceived int64 `json:"bytesReceived"`
	// PeakHeapBytes is the largest heap (bytes in heap objects, live or
	// not yet collected) sampled during the run.
	PeakHeapBytes uint64 `json:"peakHeapBytes"`
	// SteadyHeapBytes is the live heap after a forced garbage collection
	// once the controller had synced and its queue was drained; 0 if it
	// never got there.
	SteadyHeapBytes uint64 `json:"steadyHeapBytes"`
	// RunSeconds is how long Run ran.
	RunSeconds float64 `json:"runSeconds"`
	// Error is the error Run returned, if any.
	Error string `json:"error,omitempty"`
}

// EventCounts counts delivered events by type.
type EventCounts struct {
	// InitialAdds are adds flagged isInInitialList: the initial list of
	// a cold start, or the replay of the stored objects on a warm start.
	InitialAdds int64 `json:"initialAdds"`
	// Adds are the other adds.
	Adds    int64 `json:"adds"`
	Updates int64 `json:"updates"`
	// Deletes includes DeletesFinalStateUnknown.
	Deletes int64 `json:"deletes"`
	// DeletesFinalStateUnknown are deletes whose object is a
	// cache.DeletedFinalStateUnknown (found by a relist).
	DeletesFinalStateUnknown int64 `json:"deletesFinalStateUnknown"`
}

// Total returns the number of events delivered.
func (c EventCounts) Total() int64 { return c.InitialAdds + c.Adds + c.Updates + c.Deletes }

// ReadStats reads a stats file written by Run.
func ReadStats(path string) (Stats, error) {
	var s Stats
	b, err := os.ReadFile(path)
	if err != nil {
		return s, fmt.Errorf("%w: read %s: %w", ErrStats, path, err)
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return s, fmt.Errorf("%w: decode %s: %w", ErrStats, path, err)
	}
	return s, nil
}

// writeStats writes s to path through a temporary file and a rename.
func writeStats(path string, s Stats) error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return fmt.Errorf("%w: encode: %w", ErrStats, err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("%w: %w", ErrStats, err)
	}
	_, err = tmp.Write(append(b, '\n'))
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("%w: %s: %w", ErrStats, path, err)
	}
	return nil
}

// countingTransport counts the response body bytes read through it.
type countingTransport struct {
	next http.RoundTripper
	n    *atomic.Int64
}

func (t countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if resp != nil && resp.Body != nil {
		resp.Body = &countingBody{ReadCloser: resp.Body, n: t.n}
	}
	return resp, err
}

type countingBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n.Add(int64(n))
	return n, err
}

// heapSampler records the largest heap size seen.
type heapSampler struct {
	peak atomic.Uint64
	wg   sync.WaitGroup
}

const heapObjectsMetric = "/memory/classes/heap/objects:bytes"

func heapObjects() uint64 {
	s := []metrics.Sample{{Name: heapObjectsMetric}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}

// start samples every interval until ctx is done; stop waits for it.
func (h *heapSampler) start(ctx context.Context, interval time.Duration) {
	h.sample()
	h.wg.Go(func() { wait.UntilWithContext(ctx, func(context.Context) { h.sample() }, interval) })
}

func (h *heapSampler) sample() {
	v := heapObjects()
	for {
		old := h.peak.Load()
		if v <= old || h.peak.CompareAndSwap(old, v) {
			return
		}
	}
}

func (h *heapSampler) stop() { h.wg.Wait() }

// steadyHeap returns the live heap after a forced collection.
func steadyHeap() uint64 {
	runtime.GC()
	return heapObjects()
}

// counterSum returns the sum of the samples of the counter name in g (a
// prometheus Gatherer), optionally only those with label=value.
func counterSum(g prometheus.Gatherer, name, label, value string) (int64, error) {
	mfs, err := g.Gather()
	if err != nil {
		return 0, fmt.Errorf("gather metrics: %w", err)
	}
	var sum float64
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	metric:
		for _, m := range mf.GetMetric() {
			if label != "" {
				for _, lp := range m.GetLabel() {
					if lp.GetName() == label && lp.GetValue() != value {
						continue metric
					}
				}
			}
			sum += m.GetCounter().GetValue()
		}
	}
	return int64(sum), nil
}
