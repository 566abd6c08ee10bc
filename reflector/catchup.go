package reflector

import (
	"errors"
	"time"

	"k8s.io/apimachinery/pkg/util/resourceversion"
)

// catchUpMode is how a warm start's resumed watch proves that it has
// delivered every change the server had made before the reflector
// started, so that MarkSynced means caught up.
type catchUpMode int

const (
	// catchUpTarget: the resume check read the server's resourceVersion
	// R and the stored one is older. Watch events arrive in
	// resourceVersion order, so once the watch delivered an event or a
	// bookmark at or past R, every change up to R was delivered before
	// it: MarkSynced follows that event. When the resume check listed the
	// metadata of every object at R (Options.ListVersions), MarkSynced
	// follows as soon as the watch has delivered each object that
	// differed at its state at R, which is often long before that. kube-apiserver's watch cache
	// sends a watch a bookmark at its current resourceVersion 2s before
	// the watch's timeout; the watches of a catch-up ask for
	// Options.CatchUpTimeout so that an idle resource gets it within
	// about a second. A catch-up watch that stays open for its whole
	// timeout with neither an event nor a bookmark shows a server that
	// sends no bookmarks (kube-apiserver with --watch-cache=false, some
	// aggregated APIs): nothing would ever prove the idle resource caught
	// up, so after two such watches in a row the reflector relists
	// (ErrNoCatchUpSignal), which is exact.
	catchUpTarget catchUpMode = iota
	// catchUpOpen: the stored resourceVersion is the server's current
	// one. Nothing can be pending: synced as soon as the watch is open.
	catchUpOpen
	// catchUpSettle: there is no resourceVersion to reach (the resume
	// check is off, or the server's resourceVersions are not
	// kube-apiserver's integers). The last resort: synced at the first
	// event, or once the watch stayed open Options.ResumeSettle without
	// an ERROR event. It is not exact; it is never used when the server
	// answered the resume check with a comparable resourceVersion.
	catchUpSettle
)

// ErrNoCatchUpSignal: a warm start's catch-up watches stayed open for their
// whole timeout, twice in a row, and delivered neither an event nor a
// bookmark, so the server sends no bookmarks and nothing can show that the resumed watch
// has caught up with the server's resourceVersion. The reflector relists
// the most recent state instead, at once; the relist's EndReplace
// completes the sync. It is logged, not passed to the WatchErrorHandler.
var ErrNoCatchUpSignal = errors.New("the resumed watch gives no signal that it has caught up (the server sends no bookmarks)")

// catchUp is the state of a warm start until it pushes MarkSynced. It is
// owned by the goroutine running Run.
type catchUp struct {
	// pending is set while MarkSynced is owed: from a warm start until
	// MarkSynced is pushed, or until a relist (whose EndReplace syncs).
	pending bool
	mode    catchUpMode
	// target is the server's resourceVersion at the resume check
	// (catchUpTarget).
	target string
	// versions, when the resume check compared the metadata of every
	// object with the stored state (Options.ListVersions), tracks the
	// objects that differ: once the watch has delivered each at its
	// listed state, the store is the server's at target, and MarkSynced
	// follows (catchUpTarget).
	versions versionCheck
	// settle is the quiet period of catchUpSettle.
	settle time.Duration
	// started is when Run started, for the log line of the sync.
	started time.Time
	// quiet counts the catch-up watches in a row that were silent for
	// their whole timeout (quietCatchUp).
	quiet int
}

// quietCatchUps is how many catch-up watches in a row must be silent for
// their whole timeout before the reflector concludes the server sends no
// bookmarks: one could be an overloaded watch cache that sent nothing in
// time, which would cost an unneeded relist.
const quietCatchUps = 2

// quietGrace is how long past its timeout a silent catch-up watch that
// the server keeps open is waited for before the reflector ends it.
const quietGrace = 2 * time.Second

// watching reports whether the next watch is a catch-up watch: a warm
// start waiting for an event or bookmark at or past its target.
func (c *catchUp) watching() bool {
	return c.pending && c.mode == catchUpTarget
}

// reached reports whether an event or bookmark at rv shows the watch
// caught up with the target. An rv that cannot be compared shows
// nothing.
func (c *catchUp) reached(rv string) bool {
	if !c.watching() {
		return false
	}
	cmp, err := resourceversion.CompareResourceVersion(rv, c.target)
	return err == nil && cmp >= 0
}

// watchStats is what one watch delivered.
type watchStats struct {
	events    int // Add, Update, Delete and Bookmark pushed
	bookmarks int
}

// quietCatchUp reports whether a catch-up watch that closed cleanly after
// lasting d with st shows a server that sends no bookmarks: it lasted
// past the moment kube-apiserver's watch cache sends its pre-timeout
// bookmark (up to 1.25s after the timeout minus 2s: a bookmark timer
// tick of 1s with jitter 0.25) and delivered nothing at all.
func quietCatchUp(st watchStats, d, timeout time.Duration) bool {
	return st.events == 0 && st.bookmarks == 0 && d >= timeout-time.Second+time.Second/2
}

func (m catchUpMode) String() string {
	switch m {
	case catchUpTarget:
		return "event or bookmark at the server's resourceVersion"
	case catchUpOpen:
		return "stored resourceVersion is the server's"
	case catchUpSettle:
		return "quiet period"
	}
	return "unknown"
}
