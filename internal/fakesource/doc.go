// Package fakesource is a fake Kubernetes API source for tests: an
// in-memory history of objects with kube-apiserver's list and watch
// semantics, served through client-go's cache.ListerWatcher and
// cache.ListerWatcherWithContext.
//
// It improves on client-go's FakeControllerSource where warmcache's tests
// need it:
//
//   - One monotonic resourceVersion (RV) counter shared by every kind, as
//     etcd's revision is: a watch on pods sees RV gaps left by other kinds.
//   - A versioned history: LIST at an exact RV, paginated LIST whose pages
//     all come from the snapshot of the first page, WATCH from any RV still
//     in history.
//   - Compact(rv) expires older RVs and continue tokens (410 Gone, reason
//     Expired), and Restart() simulates an apiserver restart: every open
//     watch closes and all history before the restart is compacted.
//   - WatchList (sendInitialEvents=true): synthetic ADDED events for the
//     current state, then a bookmark annotated
//     "k8s.io/initial-events-end": "true". A switch makes the server reject
//     it (feature gate off) or ignore it (a server that predates it).
//   - Bookmarks on demand (SendBookmark), periodically, and 2s before a
//     watch's timeout as kube-apiserver's watch cache sends them, error injection
//     (429 with Retry-After, connection refused, 500, too large RV, streams
//     that close early or end with an undecodable or expired event), and
//     request counters per kind.
//
// ListOptions are validated with apimachinery's own validation, so a
// request kube-apiserver would reject is rejected here with the same 422.
//
// # Semantics of resourceVersion
//
// LIST: RV "" is the most recent state; RV "0" is any state (served as the
// most recent, and Limit is ignored as the watch cache ignores it unless
// Options.DisableWatchCache); RV=X with resourceVersionMatch NotOlderThan,
// or without a match and without a limit, is the most recent state, or 504
// TooLargeResourceVersion when X is ahead of the server; RV=X with match
// Exact, or the legacy form (no match, with a limit), is the snapshot at
// exactly X, or 410 Expired when X was compacted. Continue tokens carry
// the snapshot RV; once it is compacted they fail with 410 Expired.
//
// WATCH: RV "" or "0" starts with synthetic ADDED events for the current
// state, then streams changes. RV=X streams changes after X, or fails with
// 410 Expired when X was compacted (as an ERROR event, or as an immediate
// error with Options.ExpiredAsError) and with TooLargeResourceVersion when
// X is ahead of the server.
//
// Compaction only affects new requests: a watch that is already open keeps
// its place in history (kube-apiserver may instead end a watch that falls
// too far behind; inject Fault{End: EndExpired} for that).
//
// # Ownership and concurrency
//
// A Source is safe for concurrent use. It deep-copies objects it is given
// and objects it hands out, so callers may mutate both. Output is
// deterministic: lists and synthetic events come in key order
// (namespace/name) and watch events in RV order.
//
// Every watch runs one goroutine, which exits when the watch is stopped,
// its context is cancelled, it times out (ListOptions.TimeoutSeconds, on
// Options.Clock) or the source restarts.
package fakesource
