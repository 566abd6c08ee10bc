// Package reflector keeps a Sink in step with the Kubernetes API: it
// lists and watches one resource through a cache.ListerWatcherWithContext
// and pushes what it sees, in order, into the Sink (warmcache's deltafifo
// queue in production). It plays the role of client-go's
// tools/cache.Reflector, with what a persistent cache needs on top:
//
//   - Warm start. When Options.ResumeFrom reports a complete store at a
//     resourceVersion (RV), the reflector does not relist: it reads the
//     server's current RV R with one consistent LIST of at most one
//     object (the resume check, Options.ResumeCheck), then watches from
//     the stored RV with bookmarks on, and pushes MarkSynced once the
//     watch has caught up with R: just after the first event or bookmark
//     at or past R (events arrive in RV order, so everything up to R came
//     before it), or at once when the stored RV is R. Until then its
//     watches ask for a short timeout (Options.CatchUpTimeout, 3s), for
//     which kube-apiserver's watch cache sends a bookmark at its current
//     RV about a second in: a resource that did not change while the
//     informer was down syncs on it. A server that sends no bookmarks
//     (kube-apiserver with --watch-cache=false) leaves an idle resource's
//     catch-up watches silent for their whole timeout; after two in a row
//     the reflector relists the most recent state, the exact way to sync
//     there (ErrNoCatchUpSignal). A store of more than a page and at most
//     Options.VersionCheckLimit (5,000) objects is compared with the
//     server's state instead when Options.ListVersions is set (package
//     factory sets it): the resume check lists every object's metadata
//     (pages of a quarter of the store, 500 to 2,000); unchanged, the
//     warm start is synced at once; changed, MarkSynced follows the event
//     that brings the last object that differed to its state at R, with
//     or without bookmarks. kube-apiserver accepts a watch from an expired
//     RV and reports the 410 as its first event, at once; in that case the
//     reflector pushes no MarkSynced and relists, and the relist's
//     EndReplace completes the sync. A store of at most a page of objects
//     (Options.StoredVersions) is checked whole instead: the resume check
//     lists a page, and when that is the whole resource it is compared
//     with the stored keys and RVs: unchanged, the warm start is synced at
//     once (Bookmark at the list's RV, then MarkSynced); changed, the page
//     is the relist, in the same request. Only when there is no RV to
//     reach (the check off, or RVs that are not kube-apiserver's integers)
//     does MarkSynced fall back to the first event or Options.ResumeSettle
//     (1s) of quiet, which is not exact.
//   - A stored RV ahead of the server's (the cluster was recreated at the
//     same address, or its etcd restored from an older backup) is never
//     watched from (invariant 7 of ARCHITECTURE.md): the reflector logs it
//     and relists the most recent state (RV "").
//   - No decision without the server. A resume check whose LIST fails
//     (connection refused, timeout, 5xx, 429, 401 or 403) is retried like
//     a failed relist: the error goes to Options.WatchErrorHandler, the
//     retry waits on the backoff (at least a 429's Retry-After), and
//     nothing is pushed to the Sink and Options.OnResumeDecided is not
//     called until the server answers, so an informer serves none of the
//     stored objects and is not synced meanwhile. Resuming unchecked
//     would watch from an RV the server may not have reached, which
//     kube-apiserver accepts and answers with silence (below). A 401 or
//     403 is retried too, with a log line saying so: a relist would need
//     the same right, and client-go's reflector keeps retrying its list
//     until RBAC allows it. If Run's context ends first, Run returns
//     without a decision. The one case resumed unchecked is a server
//     whose resourceVersions are not kube-apiserver's integers: they
//     cannot be compared, and the log line says a stored state ahead of
//     such a server cannot be detected.
//   - Streaming relists. A relist is pushed as BeginReplace, pages of at
//     most Options.ListPageSize objects (a WatchList's grow to it with the
//     stream), and EndReplace(rv); the reflector never holds more than one
//     page. It streams with WatchList (sendInitialEvents) when the
//     server supports it and falls back to a paginated LIST otherwise:
//     as in client-go, a WatchList failure is followed at once by a LIST,
//     with a log line saying why, except a 429 or a refused connection,
//     after which the WatchList is sent again after a backoff. Reflectors
//     sharing an Options.ListGate relist (and resume-check) a few at a
//     time; a pass that stalls for its Patience stops counting.
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
//     EOF, a lost HTTP/2 connection (which client-go reports as an
//     undecodable event, a 500 of cause ClientWatchDecoding): back off,
//     then watch again from the last RV (no relist);
//   - 500 (including other undecodable events): watch again from the last RV
//     while Options.MaxInternalErrorRetryDuration allows, relist otherwise;
//   - TooLargeResourceVersion: relist from the most recent state (RV "");
//   - anything else, including a Sink error: back off and relist.
//
// # What the apiserver says about a resume
//
// ARCHITECTURE.md has the measurements against kube-apiserver v1.36.3
// that the warm start rests on (a watch from an RV the server has not
// reached is silent; the watch cache's first bookmark comes about a second
// into a 3s watch; a metadata-only list is cheap in time, not in bytes). A
// recreated cluster whose RV has passed the stored one is caught by
// package factory's record of the cluster's identity, not here.
//
// Lists follow client-go's relistResourceVersion ("0", then the last RV
// with NotOlderThan, "" after an expired continue token or a too large
// RV); a relist interrupted midway restarts with a new BeginReplace.
//
// # Differences from client-go's Reflector
//
// clientgo_*_test.go run client-go's reflector tests against this one;
// ARCHITECTURE.md (The reflector beside client-go's) lists the intended
// differences they show.
//
// The reflector runs everything on the goroutine that calls Run; it
// starts no goroutine of its own. The ListerWatcher must honour the
// context it is given.
package reflector
