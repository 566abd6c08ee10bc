package informerbench

import (
	"context"
	"time"

	"k8s.io/client-go/rest"

	"github.com/warmcache/warmcache/benchmarks/internal/apiproc"
)

// Server is what the measurements need of the API server the informers
// run against: apiproc's fake servers (*apiproc.Process) or a real
// kube-apiserver (benchmarks/internal/kubeserver). It serves the pods
// podgen generates, 0 to n-1, each updated by setting the annotation
// apiproc.GenerationAnnotation to a generation.
type Server interface {
	// Config returns a client configuration for the informers under
	// test, with contentType ("" for the server's default).
	Config(contentType string) *rest.Config
	// Churn makes n updates of generation gen, over a hot set of hot
	// pods when hot > 0 (see apiproc.Process.Churn), while holding back
	// every watch stream: no watcher sees them before Open. It returns
	// once the server has applied them.
	Churn(ctx context.Context, n, gen, hot int) (apiproc.ChurnResult, error)
	// Open releases the watch streams Churn or Restart held back.
	Open(ctx context.Context) error
	// Updates prepares the churn the events/s measurement delivers, n
	// updates as Churn's, and returns release, which the caller calls
	// when it starts measuring: release has the watchers receive the
	// updates, either released from a backlog the server applied
	// before Updates returned, or applied as they are made, and returns
	// what applying them took once the server has applied the last.
	Updates(ctx context.Context, n, gen, hot int) (release func(context.Context) (apiproc.ChurnResult, error), err error)
	// Compact discards the server's history before rv ("" for its
	// current resourceVersion) where keeping it costs the server memory
	// or space; a watch from rv or later still resumes.
	Compact(ctx context.Context, rv string) error
	// Restart restarts the server as after an outage: every watch ends
	// and its history is compacted, so that an informer resuming its
	// watch gets 410 Expired and relists. The watch streams stay held
	// back until Open.
	Restart(ctx context.Context) error
	// Stats returns the server's counts of the informers' requests for
	// pods since it started, restarts included: LISTs, WATCHes and,
	// among those, WatchLists; and its current resourceVersion where it
	// knows it ("" otherwise).
	Stats(ctx context.Context) (apiproc.Stats, error)
	// CPU returns the CPU time the server's processes have used so far.
	CPU() (time.Duration, error)
}

var _ Server = (*apiproc.Process)(nil)
