// Package reflector keeps a Sink in step with the Kubernetes API: it
// lists and watches one resource through a cache.ListerWatcherWithContext
// and pushes what it sees, in order, into the Sink (warmcache's deltafifo
// queue in production). It plays the role of client-go's
// tools/cache.Reflector, with what a persistent cache needs on top:
//
//   - Warm start. When Options.ResumeFrom reports a complete store at a
//     resourceVersion (RV), the reflector does not list at all: it watches
//     from that RV with bookmarks on and pushes MarkSynced once the watch
//     has resumed, that is before its first event, or after it stayed
//     open Options.ResumeSettle (1s) without an ERROR event. kube-apiserver
//     accepts a watch from an expired RV and reports the 410 as its first
//     event, at once; in that case the reflector pushes no MarkSynced and
//     relists, and the relist's EndReplace completes the sync.
//   - Streaming relists. A relist is pushed as BeginReplace, pages of at
//     most Options.PageSize objects, and EndReplace(rv); the Sink never
//     needs the whole list in memory and the reflector never holds more
//     than one page. It streams with WatchList (sendInitialEvents) when the
//     server supports it and falls back to a paginated LIST otherwise:
//     as in client-go, any WatchList failure is followed at once by a
//     LIST, with a log line saying why.
//   - No hot loops. Every retry waits on one exponential backoff
//     (client-go's defaults: 800ms doubling to 30s, jitter 1.0, reset
//     after 2 minutes without trouble), 429 answers wait at least their
//     Retry-After, and repeated 410s back off between relists
//     (kubernetes/kubernetes#133810).
//
// # Recovery rules
//
// Live watch events go to Add, Update, Delete and Bookmark, and their RV
// becomes LastSyncResourceVersion. When the watch ends:
//
//   - cleanly (timeout, connection closed): watch again from the last RV,
//     after a backoff if the watch delivered nothing and lasted under a
//     second;
//   - 410 Gone/Expired (as an error or an ERROR event): relist at once the
//     first time, after a backoff when the previous relist was less than
//     Options.BackoffReset ago;
//   - 429, connection refused or reset, 503, server timeouts, unexpected
//     EOF: back off, then watch again from the last RV (no relist);
//   - 500 (including undecodable events): watch again from the last RV
//     while Options.MaxInternalErrorRetryDuration allows, relist otherwise;
//   - TooLargeResourceVersion: relist from the most recent state (RV "");
//   - anything else, including a Sink error: back off and relist.
//
// Lists follow client-go's relistResourceVersion: the first list asks for
// RV "0" (any, served from the watch cache), later ones for the last RV
// with resourceVersionMatch=NotOlderThan, and after an expired continue
// token or TooLargeResourceVersion for RV "" (most recent, consistent).
// A relist interrupted midway restarts with a new BeginReplace.
//
// The reflector runs everything on the goroutine that calls Run; it
// starts no goroutine of its own. The ListerWatcher must honour the
// context it is given.
package reflector
