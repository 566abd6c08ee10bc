package bolt

import "time"

// Metrics receives the measurements of a DB and its stores
// (Options.Metrics); package store/bolt/metrics records them as Prometheus
// metrics. Its methods are called concurrently and must not block.
type Metrics interface {
	// Hot returns the metrics of the hot tier of resource (named by its
	// Identity.String()), for a store that has one.
	Hot(resource string) HotMetrics
	// CorruptRecord counts a corrupt record of resource: part "envelope",
	// "item" (a skipped object), "index", "meta" or "live" (discarded).
	CorruptRecord(resource, part string)
	// File returns the metrics of the file at path.
	File(path string) FileMetrics
}

// HotMetrics counts a hot tier's point reads served (Hit) and decoded
// (Miss), evictions, and the objects entering and leaving it with their
// estimated bytes.
type HotMetrics interface {
	Hit()
	Miss()
	Evicted()
	Added(bytes int64)
	Removed(bytes int64)
}

// FileMetrics records corruption found in an open file, and the verdict of
// the check of its pages (how long the background check took, 0 when Open
// checked them).
type FileMetrics interface {
	Corrupt()
	Checked(d time.Duration, corrupt bool)
}

// noMetrics is the Metrics of a DB without Options.Metrics.
type noMetrics struct{}

func (noMetrics) Hot(string) HotMetrics        { return noMetrics{} }
func (noMetrics) CorruptRecord(string, string) {}
func (noMetrics) File(string) FileMetrics      { return noMetrics{} }
func (noMetrics) Hit()                         {}
func (noMetrics) Miss()                        {}
func (noMetrics) Evicted()                     {}
func (noMetrics) Added(int64)                  {}
func (noMetrics) Removed(int64)                {}
func (noMetrics) Corrupt()                     {}
func (noMetrics) Checked(time.Duration, bool)  {}
