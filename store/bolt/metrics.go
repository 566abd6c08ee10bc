package bolt

import "time"

// Metrics receives the measurements of a DB and its stores
// (Options.Metrics); package store/bolt/metrics records them as Prometheus
// metrics. Its methods are called concurrently and must not block.
type Metrics interface {
	// Hot returns the metrics of the hot tier of the store of the
	// resource named resource (Identity.String()); it is called for the
	// stores that have a tier.
	Hot(resource string) HotMetrics
	// CorruptRecord counts a stored record of resource found corrupt (a
	// checksum mismatch, an object that does not decode): part is
	// "envelope" or "item" for an object a read skipped, "index" for an
	// index entry, "meta" or "live" for a resource discarded on open.
	CorruptRecord(resource, part string)
	// File returns the metrics of the check of the file at path (as given
	// to Open).
	File(path string) FileMetrics
}

// HotMetrics receives the measurements of a store's hot tier. Bulk reads
// do not count.
type HotMetrics interface {
	// Hit counts a point read (Get, GetByKey) the tier served, Miss one
	// that decoded the object.
	Hit()
	Miss()
	// Evicted counts an object evicted to stay within the budget.
	Evicted()
	// Added and Removed count an object entering and leaving the tier,
	// with its estimated bytes.
	Added(bytes int64)
	Removed(bytes int64)
}

// FileMetrics receives the measurements of a file's check.
type FileMetrics interface {
	// Corrupt records that corruption was found in the open file, by the
	// check or by a read.
	Corrupt()
	// Checked records the verdict of the check of every page: how long
	// the background check took (0 when Open checked every page) and
	// whether it found the file corrupt.
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
