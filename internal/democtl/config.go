// Package democtl is the controller that `make demo` and the end-to-end
// tests (test/e2e) run as a child process: the workqueue pattern of
// examples/workqueue on a warmcache informer, instrumented to report what a
// restart costs.
//
// A pod informer from a factory.Factory feeds event handlers that count
// each event, log it as a JSON line (Event) and enqueue its key into a
// rate-limited workqueue; workers take keys off the queue and read the pod
// from the lister (corelisters.PodLister on the informer's store) and the
// node index. Run measures time until the informer has synced and every
// initial event was delivered, the events delivered by type, the LIST and
// WATCH requests the informer made (its Prometheus metrics), the bytes it
// received (a counting RoundTripper on the REST config) and the peak and
// steady heap, and writes them as Stats.
//
// Main wraps Run with the flags the demo and the tests drive; the command
// in cmd/democtl runs Main, and the end-to-end tests re-execute their own
// binary into it.
package democtl

import (
	"errors"
	"fmt"
	"io"
	"time"

	"k8s.io/client-go/rest"
)

// Errors of this package, wrapped with the operation; test with errors.Is.
var (
	// ErrInvalidConfig reports a Config that cannot work.
	ErrInvalidConfig = errors.New("democtl: invalid config")
	// ErrSync reports that the informer did not sync before Run's context
	// ended.
	ErrSync = errors.New("democtl: informer did not sync")
	// ErrStats reports that the stats file could not be written.
	ErrStats = errors.New("democtl: cannot write stats")
)

// Defaults of Config.
const (
	// DefaultWorkers is the default Config.Workers.
	DefaultWorkers = 2
	// DefaultHeapSampleInterval is the default Config.HeapSampleInterval.
	DefaultHeapSampleInterval = 10 * time.Millisecond
)

// Config configures Run. RESTConfig is required.
type Config struct {
	// RESTConfig reaches the apiserver (required). Run uses a copy whose
	// transport counts the bytes received.
	RESTConfig *rest.Config
	// CacheFile is the bbolt file that holds the cache across restarts.
	// Default "": an in-memory cache, every start is a cold start.
	CacheFile string
	// Namespace restricts the controller to one namespace. Default "":
	// all namespaces.
	Namespace string
	// Workers is the number of goroutines that process keys. Default
	// DefaultWorkers.
	Workers int
	// EventLog, when set, receives one JSON line per delivered event and
	// one when the controller has synced (see Event). Writes are
	// serialised; a write error is logged once and the log disabled.
	// Default nil: no log.
	EventLog io.Writer
	// StatsFile, when set, is written with the Stats as JSON when Run
	// returns (also after a failure, with what was measured). It is
	// written to a temporary name and renamed, so a reader never sees a
	// partial file. Default "": no file.
	StatsFile string
	// HeapSampleInterval is how often the heap size is sampled for
	// Stats.PeakHeapBytes. Default DefaultHeapSampleInterval.
	HeapSampleInterval time.Duration
}

func (c Config) withDefaults() (Config, error) {
	switch {
	case c.RESTConfig == nil:
		return c, fmt.Errorf("%w: RESTConfig is required", ErrInvalidConfig)
	case c.Workers < 0:
		return c, fmt.Errorf("%w: Workers %d is negative", ErrInvalidConfig, c.Workers)
	case c.HeapSampleInterval < 0:
		return c, fmt.Errorf("%w: HeapSampleInterval %v is negative", ErrInvalidConfig, c.HeapSampleInterval)
	}
	if c.Workers == 0 {
		c.Workers = DefaultWorkers
	}
	if c.HeapSampleInterval == 0 {
		c.HeapSampleInterval = DefaultHeapSampleInterval
	}
	return c, nil
}
