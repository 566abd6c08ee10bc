package storebench

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/tools/cache"

	"github.com/warmcache/warmcache/informer"
	"github.com/warmcache/warmcache/reflector"
	"github.com/warmcache/warmcache/store"
	"github.com/warmcache/warmcache/store/bolt"
	boltmetrics "github.com/warmcache/warmcache/store/bolt/metrics"
	"github.com/warmcache/warmcache/store/codec"
	"github.com/warmcache/warmcache/store/memory"
)

// The implementations measured, by name. ClientGo is the baseline.
const (
	ClientGo = "client-go"
	Memory   = "memory"
	Bolt     = "bolt"
)

// Impls lists the implementations in the order the benchmarks run and
// print them; the first is the baseline.
var Impls = []string{ClientGo, Memory, Bolt}

// ErrUnknownImpl is returned by Open for a name not in Impls.
var ErrUnknownImpl = errors.New("storebench: unknown implementation")

// DefaultBatchSize is the default Options.BatchSize: the informer's
// default batch, the most keys it applies in one write.
const DefaultBatchSize = informer.DefaultBatchSize

// DefaultPageSize is the default Options.PageSize: the reflector's page
// size, the objects of one Replace page.
const DefaultPageSize = reflector.DefaultPageSize

// Options configures Open.
type Options struct {
	// Dir holds the bolt store's file. Required for Bolt; the file is
	// removed by Target.Close.
	Dir string
	// BoltSync is the bolt store's durability policy. Default (zero):
	// bolt.SyncOnClose, the store's default.
	BoltSync bolt.SyncPolicy
	// BatchSize is the number of objects per write. Default
	// DefaultBatchSize.
	BatchSize int
	// PageSize is the number of objects per Replace page. Default
	// DefaultPageSize.
	PageSize int
	// Registerer receives the bolt store's metrics (its hot tier's).
	// Default: none.
	Registerer prometheus.Registerer
	// BoltHotBytes is the budget of the bolt store's hot tier of decoded
	// objects, which keeps the objects written up to its budget whatever
	// the number of pods. Default (nil): bolt.DefaultHotBytes.
	BoltHotBytes *int64
	// BoltPageSize is the page size of the bolt store's file
	// (bolt.Options.PageSize). Default (0): the store's default.
	BoltPageSize int
}

// Target is one store under test, with the namespace index
// (cache.NamespaceIndex). It is as safe for concurrent use as its store.
type Target struct {
	// Name is the implementation's name.
	Name string
	// Indexer is the store.
	Indexer   cache.Indexer
	batchSize int
	pageSize  int
	// ws is the warmcache store (nil for client-go); Apply and
	// BeginReplace are used on it, as the informer uses them.
	ws     store.Store
	db     *bolt.DB
	path   string
	closed bool
	// borrowed: ws belongs to the caller of Wrap, which closes it.
	borrowed bool
}

// Wrap returns a Target named name over s, a warmcache store opened
// elsewhere (the store of a factory's informer, for example), written as
// Open's targets are. Close does not close s: its owner does.
func Wrap(name string, s store.Store) *Target {
	return &Target{Name: name, Indexer: s, ws: s, batchSize: DefaultBatchSize, pageSize: DefaultPageSize, borrowed: true}
}

// Indexers returns the indexes every target has: the namespace index.
func Indexers() cache.Indexers {
	return cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}
}

// BoltResource returns the options of the resource a Bolt target opens:
// pods, in protobuf, with Indexers. Programs that write a bolt file of
// podgen pods open it with them too.
func BoltResource() bolt.ResourceOptions {
	return bolt.ResourceOptions{
		Identity: bolt.Identity{Version: "v1", Resource: "pods", Kind: "Pod"},
		Codec:    codec.Protobuf(nil),
		Indexers: Indexers(),
	}
}

// Open opens an empty store of the named implementation.
func Open(ctx context.Context, impl string, opts Options) (*Target, error) {
	if opts.BatchSize < 0 || opts.PageSize < 0 {
		return nil, fmt.Errorf("%w: batch size %d, page size %d", ErrInvalidArgument, opts.BatchSize, opts.PageSize)
	}
	if opts.BatchSize == 0 {
		opts.BatchSize = DefaultBatchSize
	}
	if opts.PageSize == 0 {
		opts.PageSize = DefaultPageSize
	}
	t := &Target{Name: impl, batchSize: opts.BatchSize, pageSize: opts.PageSize}
	switch impl {
	case ClientGo:
		t.Indexer = cache.NewIndexer(cache.DeletionHandlingMetaNamespaceKeyFunc, Indexers())
	case Memory:
		s, err := memory.New(memory.Options{Indexers: Indexers()})
		if err != nil {
			return nil, fmt.Errorf("storebench: open %s: %w", impl, err)
		}
		t.Indexer, t.ws = s, s
	case Bolt:
		if opts.Dir == "" {
			return nil, fmt.Errorf("%w: %s needs a directory", ErrInvalidArgument, impl)
		}
		f, err := os.CreateTemp(opts.Dir, "storebench-*.db")
		if err != nil {
			return nil, fmt.Errorf("storebench: open %s: %w", impl, err)
		}
		t.path = f.Name()
		// bolt.Open creates the file; start from none.
		if err := errors.Join(f.Close(), os.Remove(t.path)); err != nil {
			return nil, fmt.Errorf("storebench: open %s: %w", impl, err)
		}
		bo := bolt.Options{Sync: opts.BoltSync, HotBytes: opts.BoltHotBytes, PageSize: opts.BoltPageSize}
		if opts.Registerer != nil {
			if bo.Metrics, err = boltmetrics.New(opts.Registerer); err != nil {
				return nil, fmt.Errorf("storebench: open %s: %w", impl, err)
			}
		}
		db, err := bolt.Open(ctx, t.path, bo)
		if err != nil {
			return nil, fmt.Errorf("storebench: open %s: %w", impl, err)
		}
		s, err := db.Resource(ctx, BoltResource())
		if err != nil {
			return nil, fmt.Errorf("storebench: open %s: %w", impl, errors.Join(err, db.Close(), bolt.Remove(t.path)))
		}
		t.Indexer, t.ws, t.db = s, s, db
	default:
		return nil, fmt.Errorf("%w: %q (want one of %v)", ErrUnknownImpl, impl, Impls)
	}
	return t, nil
}

// write applies one batch, as the informer does: Apply on warmcache's
// stores (one transaction with its resourceVersion), Transaction on
// client-go's (what its informer calls with the AtomicFIFO feature on).
func (t *Target) write(ctx context.Context, txns []cache.Transaction, rv string) error {
	if t.ws != nil {
		return t.ws.Apply(ctx, txns, rv)
	}
	if terr := t.Indexer.(cache.TransactionStore).Transaction(txns...); terr != nil {
		return fmt.Errorf("storebench: %s transaction: %w", t.Name, terr)
	}
	return nil
}

// FileBytes returns the size of the bolt store's file, 0 for the other
// implementations.
func (t *Target) FileBytes() (int64, error) {
	if t.path == "" {
		return 0, nil
	}
	fi, err := os.Stat(t.path)
	if err != nil {
		return 0, fmt.Errorf("storebench: %s file size: %w", t.Name, err)
	}
	return fi.Size(), nil
}

// Close closes the store and removes its file, if any. Closing a closed
// Target does nothing.
func (t *Target) Close() error {
	if t.closed {
		return nil
	}
	t.closed = true
	var errs []error
	if t.ws != nil && !t.borrowed {
		errs = append(errs, t.ws.Close())
	}
	if t.db != nil {
		errs = append(errs, t.db.Close())
	}
	if t.path != "" {
		errs = append(errs, bolt.Remove(t.path))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("storebench: close %s: %w", t.Name, err)
	}
	return nil
}
