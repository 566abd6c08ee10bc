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

// Options configures Open. The zero value is valid: a read-write file with
// the default sync policy.
type Options struct {
	// Timeout bounds the wait for the file lock; Open returns an error
	// wrapping ErrLocked when it expires. Default (0): 1s. Negative is
	// invalid.
	Timeout time.Duration
	// ReadOnly opens the file with a shared lock and never writes it:
	// writes return ErrReadOnly, and Resource refuses data that would
	// have to be discarded or rebuilt. Several read-only DBs may share a
	// file; a read-write one keeps them out while it has the file open,
	// and one opened while they have it does not wait for them: it writes
	// a copy (see DB). Default: false.
	ReadOnly bool
	// Logger receives the DB's and its stores' log lines (discarded data,
	// interrupted relists, corruption). Default (zero Logger):
	// klog.FromContext of Open's context.
	Logger klog.Logger
	// Sync is the durability policy of commits; see SyncPolicy. Default:
	// SyncOnClose.
	Sync SyncPolicy
	// FlushInterval is, under SyncOnClose, how often the file is flushed
	// in the background, so that a write error of the disk is found and
	// recorded (the next start relists) within that time instead of at
	// Close. Default (0): 30s; negative: never.
	FlushInterval time.Duration
	// FileMode is the permission of a file Open creates. Default: 0600.
	FileMode os.FileMode
	// UnsafeIgnoreState opens, read-only, a file whose state file says it
	// may be torn (ErrUnflushed), to inspect it: its content may be wrong
	// in ways no check detects. Only valid with ReadOnly. Default: false.
	UnsafeIgnoreState bool
	// HotBytes is the byte budget of the DB's hot tier, the cache of
	// decoded objects that serves repeated point reads (Get, GetByKey)
	// without decoding, shared by every resource of the DB that does not
	// set ResourceOptions.HotBytes. It is filled by point reads and by the
	// objects the store writes (Add, Update, Apply, Transaction; those in
	// a probation segment whose share adapts to the reads), never by bulk
	// reads; see the package documentation for what it holds and how an
	// object's bytes are estimated. Default (nil): DefaultHotBytes; a
	// pointer to 0 (or less) disables it.
	HotBytes *int64
	// Metrics, if set, receives the measurements of the DB and its
	// stores: their hot tiers, the corrupt records found, the file's
	// check. Package store/bolt/metrics records them as Prometheus
	// metrics. Several DBs may share one. Default: nil (none).
	Metrics Metrics
	// CheckAtOpen makes Open read and check every page of the file before
	// it returns, as DB.FileCheck's background walk does otherwise: a
	// damaged page anywhere is then an ErrCorrupt from Open, before any
	// read, at a cost linear in the file's size (about 0.8 ms per MB from
	// the page cache). Default false: Open checks what it can in a time
	// independent of the file's size, and the rest is checked in the
	// background (see DB.FileCheck).
	CheckAtOpen bool
	// PageSize is the page size, in bytes, of a file Open creates: a power
	// of two from MinPageSize to MaxPageSize. It applies only when the
	// file is created; an existing file keeps the page size it was created
	// with (bbolt reads it from the file's meta page), whatever this
	// option says. Default (0): DefaultPageSize, 16 KiB. See the package
	// documentation for the measurements behind the default, and for when
	// the operating system's page size (4096, bbolt's own default) is the
	// better choice.
	PageSize int
}

// The range of Options.PageSize: what the file check accepts as a bbolt
// page size.
const (
	MinPageSize = filecheck.MinPageSize
	MaxPageSize = filecheck.MaxPageSize
)

// DefaultPageSize is the default Options.PageSize: 16 KiB, four times
// the operating system's usual page size, so that the leaf holding two
// objects of several KB (a pod's envelope is about 6.4 KB) is one page
// instead of four or more. See the package documentation's "Page size".
const DefaultPageSize = 16 << 10

// DefaultHotBytes is the default budget of a DB's hot tier: 32 MiB, about
// 3,000 decoded podgen pods (10.5 KB each), which hold 80% of the reads of
// a Zipf(1.1)-skewed key choice among 100k objects. A few tens of
// megabytes per file keeps the informer's heap flat, and a controller's
// reads after events (the objects just written) hit it.
const DefaultHotBytes int64 = 32 << 20

// SyncPolicy says how a commit reaches stable storage. See the package
// documentation for the measurements behind the default.
type SyncPolicy int

const (
	// SyncOnClose never flushes a commit: Close flushes the file, and a
	// state file beside it (path + ".state") records whether it was
	// closed, or which boot of the machine had it open. A process that
	// dies loses nothing it committed (its writes are in the kernel's page
	// cache); a file whose writer was still running when the machine
	// restarted may be torn, and Open refuses it with ErrUnflushed (the
	// caller moves it aside and relists, as for a corrupt file). The
	// default: a cache can afford a relist after a machine crash, and
	// random writes of large objects run about twice as fast without a
	// flush per commit. Where the boot id cannot be read
	// (/proc/sys/kernel/random/boot_id), Open logs it and uses
	// SyncNoFreelist instead.
	SyncOnClose SyncPolicy = iota
	// SyncNoFreelist flushes every commit (fdatasync of the data pages,
	// then of the meta page) but does not write bbolt's freelist: a
	// read-write Open rebuilds it by reading the file's pages, which costs
	// time proportional to the file size at every Open. A commit that
	// returned survives a power loss. After a relist the freed generation
	// leaves a freelist of tens of thousands of pages that SyncFull
	// rewrites at every commit.
	SyncNoFreelist
	// SyncFull flushes every commit like SyncNoFreelist and also writes
	// the freelist (bbolt's default), so that Open does not read the
	// whole file.
	SyncFull
	// UnsafeNoSync never flushes, not even on Close: a power loss or
	// kernel crash can leave a torn file whose meta page points at pages
	// that never reached the disk. It records the file "open" in the
	// state file like SyncOnClose and never "closed", so such a file is
	// refused after a restart of the machine, however it ended. Use it
	// only for files on a tmpfs or for tests.
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
	return o, nil
}

// ResourceOptions configures DB.Resource.
type ResourceOptions struct {
	// Identity names the resource and its list/watch scope. Required
	// (Version and Resource at least). Its canonical string names the
	// resource's bucket.
	Identity Identity
	// Codec encodes the payloads. Required. A resource recorded with
	// another codec name is discarded, never misread.
	Codec codec.Codec
	// Prototype is an object of the Go type the codec decodes into. The
	// structure of its type (fields, types and tags, recursively) is
	// fingerprinted and recorded; a resource recorded with another
	// fingerprint is discarded and relisted, because decoding silently
	// drops the fields a binary's types do not know, so objects stored by
	// an older binary lack the fields added since. Default: the type
	// client-go's scheme (k8s.io/client-go/kubernetes/scheme) registers
	// for the Identity's group, version and kind; for a kind it does not
	// know (a custom resource decoded into unstructured objects, which keep
	// every field) no fingerprint is recorded.
	Prototype runtime.Object
	// Indexers are the indexes the store maintains; every function must be
	// non-nil. Index functions may be called with the store's write lock
	// held and concurrently with each other; they must be deterministic
	// and must not call the store. Default: none.
	Indexers cache.Indexers
	// KeyFunc computes an object's key. It is called concurrently (a
	// large batch is prepared on every core) and must be deterministic.
	// Default: store.DefaultKeyFunc.
	KeyFunc cache.KeyFunc
	// IndexVersion is recorded with the index names. Change it when an
	// index function changes meaning under the same name: the stored
	// index entries are then rebuilt from the items on open. Default: "".
	IndexVersion string
	// TransformVersion names the transform that shaped the stored objects
	// (an informer's SetTransform). Change it whenever the transform
	// changes what it keeps or how it rewrites objects: a resource
	// recorded with another TransformVersion is discarded on open, with a
	// log line, and relisted, never served shaped by the old transform.
	// Default: "" (no transform, or one that never changes).
	TransformVersion string
	// Cluster identifies the cluster the data is a cache of (for example
	// the UID of its kube-system namespace). A resource recorded with
	// another Cluster is discarded on open, with a log line, and relisted:
	// a file pointed at a recreated or another cluster is never served.
	// Default: "" (unknown; a later open with a known cluster discards).
	Cluster string
	// HotBytes, if set, gives the store a hot tier of its own with this
	// byte budget (0 or less: none) instead of a share of the DB's
	// (Options.HotBytes). An entry is used only while the stored bytes are
	// those its object was decoded or encoded from. Cached objects are
	// shared between callers, who must not mutate them. Default (nil): the
	// DB's tier.
	HotBytes *int64
	// OnCorruption, if set, is called when a read finds data it cannot
	// decode (the object is skipped and the state marked incomplete) so
	// that the informer can trigger a relist. It is called synchronously
	// from the reading goroutine, without the store's locks held, and must
	// not block. Default: nil (the problem is logged only).
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
