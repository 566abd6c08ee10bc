package bolt

import (
	"fmt"
	"os"
	"time"

	"github.com/warmcache/warmcache/store"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/warmcache/warmcache/store/bolt/internal/filecheck"
	"github.com/warmcache/warmcache/store/codec"
)

// Options configures Open. The zero value is valid: a read-write file
// with the default sync policy.
type Options struct {
	// Timeout bounds the wait for the file's lock (ErrLocked). Default
	// (0): 1s; negative is invalid.
	Timeout time.Duration
	// ReadOnly opens the file shared and never writes it: writes return
	// ErrReadOnly, and Resource refuses data that would have to be
	// discarded or rebuilt. Default: false.
	ReadOnly bool
	// Logger receives the log lines of the DB and its stores. Default:
	// klog.FromContext of Open's context.
	Logger klog.Logger
	// Sync is the durability policy of commits. Default: SyncOnClose.
	Sync SyncPolicy
	// FlushInterval is how often a SyncOnClose file is flushed, so that a
	// failed write of the disk is found (and the next start relists).
	// Default (0): 30s; negative: never.
	FlushInterval time.Duration
	// FileMode is the permission of a file Open creates. Default: 0600.
	FileMode os.FileMode
	// UnsafeIgnoreState opens, with ReadOnly, a file whose state file
	// says it may be torn (ErrUnflushed), to inspect it. Default: false.
	UnsafeIgnoreState bool
	// HotBytes is the byte budget of the hot tier of decoded objects,
	// shared by the stores without ResourceOptions.HotBytes; at least a
	// resource's decoded size makes its lists as fast as client-go's
	// (docs/tuning.md). Default (nil): DefaultHotBytes; 0: none.
	HotBytes *int64
	// Metrics, if set, receives the measurements of the DB and its
	// stores (package store/bolt/metrics: Prometheus). Default: none.
	Metrics Metrics
	// CheckAtOpen makes Open check every page of the file (about 0.8 ms
	// per MB) instead of leaving the pages of the data to a background
	// check (DB.FileCheck). Default: false.
	CheckAtOpen bool
	// PageSize is the page size of a file Open creates, a power of two
	// from MinPageSize to MaxPageSize; an existing file keeps its own
	// (DB.PageSize). Default (0): DefaultPageSize.
	PageSize int
	// ReplayHeadroom is the heap a replay (ScanParallel) of 16,384 objects
	// or more lends the collector, 1 KiB per object up to it, while it
	// lasts (docs/tuning.md). Default (nil): DefaultReplayHeadroom.
	ReplayHeadroom *int64
}

// The range of Options.PageSize: what the file check accepts as a bbolt
// page size.
const (
	MinPageSize = filecheck.MinPageSize
	MaxPageSize = filecheck.MaxPageSize
)

// DefaultPageSize is the default Options.PageSize: 16 KiB, so that a leaf
// of two objects of several KB (a pod) is one page.
const DefaultPageSize = 16 << 10

// DefaultHotBytes is the default budget of a DB's hot tier: 32 MiB, about
// 3,000 decoded pods.
const DefaultHotBytes int64 = 32 << 20

// DefaultReplayHeadroom is the default Options.ReplayHeadroom.
const DefaultReplayHeadroom int64 = 64 << 20

// replayHeadroomPerObject is what a ScanParallel lends per object, up to
// Options.ReplayHeadroom.
const replayHeadroomPerObject = 1 << 10

// replayHeadroomFrom is the fewest objects a ScanParallel lends for: the
// scan of a smaller resource makes too few collections for the room to
// save any. A variable for the tests.
var replayHeadroomFrom int64 = 1 << 14

// SyncPolicy says how a commit reaches stable storage.
type SyncPolicy int

const (
	// SyncOnClose, the default, flushes on Close only, and a state file
	// (path.state) records whether the file was closed: a dead process
	// loses nothing it committed; a file whose writer ran when the machine
	// restarted is refused with ErrUnflushed. Without a boot id to read,
	// Open uses SyncNoFreelist.
	SyncOnClose SyncPolicy = iota
	// SyncNoFreelist flushes every commit but does not write bbolt's
	// freelist, which a read-write Open of a file whose writer died
	// rebuilds by reading every page. A commit that returned survives a
	// power loss.
	SyncNoFreelist
	// SyncFull flushes every commit and writes the freelist (bbolt's
	// default).
	SyncFull
	// UnsafeNoSync never flushes, not even on Close, and its files are
	// refused after a restart of the machine: for a tmpfs, or tests.
	UnsafeNoSync
)

func (p SyncPolicy) String() string {
	switch p {
	case SyncOnClose:
		return "SyncOnClose"
	case SyncFull:
		return "SyncFull"
	case SyncNoFreelist:
		return "SyncNoFreelist"
	case UnsafeNoSync:
		return "UnsafeNoSync"
	}
	return fmt.Sprintf("SyncPolicy(%d)", int(p))
}

const (
	defaultTimeout       = time.Second
	defaultFlushInterval = 30 * time.Second
)

func (o Options) withDefaults() (Options, error) {
	switch {
	case o.Timeout < 0:
		return o, fmt.Errorf("%w: negative Timeout %v", ErrInvalidOptions, o.Timeout)
	case o.Sync < SyncOnClose || o.Sync > UnsafeNoSync:
		return o, fmt.Errorf("%w: unknown Sync policy %v", ErrInvalidOptions, o.Sync)
	case o.UnsafeIgnoreState && !o.ReadOnly:
		return o, fmt.Errorf("%w: UnsafeIgnoreState needs ReadOnly", ErrInvalidOptions)
	case o.PageSize != 0 && (o.PageSize < MinPageSize || o.PageSize > MaxPageSize || o.PageSize&(o.PageSize-1) != 0):
		return o, fmt.Errorf("%w: PageSize %d is not a power of two from %d to %d", ErrInvalidOptions, o.PageSize, MinPageSize, MaxPageSize)
	case o.ReplayHeadroom != nil && *o.ReplayHeadroom < 0:
		return o, fmt.Errorf("%w: negative ReplayHeadroom %d", ErrInvalidOptions, *o.ReplayHeadroom)
	}
	if o.Timeout == 0 {
		o.Timeout = defaultTimeout
	}
	if o.FlushInterval == 0 {
		o.FlushInterval = defaultFlushInterval
	}
	if o.FileMode == 0 {
		o.FileMode = 0o600
	}
	if o.HotBytes == nil {
		o.HotBytes = ptrTo(DefaultHotBytes)
	}
	if o.PageSize == 0 {
		o.PageSize = DefaultPageSize
	}
	if o.ReplayHeadroom == nil {
		o.ReplayHeadroom = ptrTo(DefaultReplayHeadroom)
	}
	return o, nil
}

// ResourceOptions configures DB.Resource.
type ResourceOptions struct {
	// Identity names the resource and its list/watch scope. Required
	// (Version and Resource at least).
	Identity Identity
	// Codec encodes the payloads. Required. A resource recorded with
	// another codec is discarded, never misread.
	Codec codec.Codec
	// Prototype is an object of the Go type the codec decodes into, whose
	// structure is recorded: a resource recorded with another is discarded
	// and relisted. Default: the type client-go's scheme registers for the
	// Identity's kind (none for a kind it does not know).
	Prototype runtime.Object
	// Indexers are the indexes the store maintains; every function must be
	// non-nil, deterministic, safe to call concurrently and must not call
	// the store. Default: none.
	Indexers cache.Indexers
	// KeyFunc computes an object's key; it is called concurrently, must
	// be deterministic and must not call the store. Default:
	// store.DefaultKeyFunc.
	KeyFunc cache.KeyFunc
	// IndexVersion is recorded with the index names: change it when an
	// index function changes meaning under the same name, and the index
	// entries are rebuilt on open. Default: "".
	IndexVersion string
	// TransformVersion names the transform that shaped the stored objects
	// (an informer's SetTransform): change it whenever the transform
	// changes, and a resource recorded with another one is discarded and
	// relisted. Default: "".
	TransformVersion string
	// Cluster identifies the cluster the data is a cache of (the UID of
	// its kube-system namespace, say): a resource recorded with another
	// one is discarded and relisted. Default: "" (unknown).
	Cluster string
	// HotBytes, if set, gives the store a hot tier of its own with this
	// byte budget (0: none) instead of a share of the DB's. Default: nil.
	HotBytes *int64
	// OnCorruption, if set, is called, synchronously and without the
	// store's locks, when a read skips data it cannot decode and marks the
	// resource incomplete, so that the informer relists; it must not block.
	OnCorruption func(error)
}

func (o ResourceOptions) withDefaults() (ResourceOptions, error) {
	if o.Codec == nil {
		return o, fmt.Errorf("%w: Codec is required", ErrInvalidOptions)
	}
	if o.Codec.Name() == "" {
		return o, fmt.Errorf("%w: Codec has an empty name", ErrInvalidOptions)
	}
	id, err := o.Identity.canonical()
	if err != nil {
		return o, err
	}
	o.Identity = id
	for name, fn := range o.Indexers {
		if fn == nil {
			return o, fmt.Errorf("%w: index %q has a nil IndexFunc", ErrInvalidOptions, name)
		}
	}
	if o.KeyFunc == nil {
		o.KeyFunc = store.DefaultKeyFunc
	}
	return o, nil
}

func ptrTo[T any](v T) *T { return &v }
