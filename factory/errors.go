package factory

import "errors"

// Errors of this package. They are wrapped with the resource and the
// cause; test with errors.Is.
var (
	// ErrShutdown is returned by the informer constructors and
	// WatchDiscovered once Shutdown was called; it also matches
	// informer.ErrStopped.
	ErrShutdown = errors.New("factory: shut down")
	// ErrInvalidOptions is returned by New and the informer constructors
	// for options that cannot work (Options.Informer.Store set, a
	// resource without version, an unparsable selector).
	ErrInvalidOptions = errors.New("factory: invalid options")
	// ErrResource is returned for a resource the factory cannot serve:
	// an unknown kind, no client for it, a codec error.
	ErrResource = errors.New("factory: cannot serve resource")
	// ErrShardIgnored is returned by the list of a ListerWatcher of a
	// sharded scope (Scope.Shard) when the server's answer is not that
	// shard: no ListMeta.ShardInfo, the ShardInfo of another selector, or
	// (metadata-only lists, which carry no ShardInfo) an object outside
	// the shard's ranges. A server without the ShardedListAndWatch
	// feature gate ignores the shard selector and sends the whole
	// collection; enable the gate on kube-apiserver, or drop Scope.Shard.
	// The reflector passes it to the WatchErrorHandler and retries on its
	// backoff; the informer does not sync on such an answer. A watch of
	// such a ListerWatcher that sends an object outside the shard drops
	// the event and logs it with ErrShardIgnored, once per watch.
	ErrShardIgnored = errors.New("factory: the server ignored the shard selector (enable the ShardedListAndWatch feature gate on kube-apiserver, or drop Scope.Shard)")
)
