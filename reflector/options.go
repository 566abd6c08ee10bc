package reflector

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// Defaults, as client-go's reflector uses them.
const (
	// DefaultListPageSize is the page size of lists and of WatchList pages
	// (client-go's pager.PageSize).
	DefaultListPageSize = 500
	// DefaultBackoffReset is how long without trouble resets the backoff.
	DefaultBackoffReset = 2 * time.Minute
	// DefaultMinWatchTimeout is the shortest server-side watch timeout
	// requested; each watch asks for a random one in [min, 2*min].
	DefaultMinWatchTimeout = 5 * time.Minute
	// DefaultResumeSettle is how long a watch resumed from the persisted
	// resourceVersion must stay open without an ERROR event before a warm
	// start counts as synced when there is no resourceVersion to reach;
	// see Options.ResumeSettle.
	DefaultResumeSettle = time.Second
	// DefaultCatchUpTimeout is the server-side timeout of a warm start's
	// catch-up watches; see Options.CatchUpTimeout.
	DefaultCatchUpTimeout = 3 * time.Second
	// DefaultVersionCheckLimit is the most stored objects whose versions a
	// warm start compares with the server's; see Options.ListVersions.
	// The check costs what a metadata-only list costs: on kube-apiserver
	// v1.36.3, 0.03-0.11s at 2,000 pods, 0.16s at 10,000, where the bookmark
	// it spares comes 0.4-2.3s after the watch; but an object's metadata
	// is most of a pod's bytes (its managedFields): 5 KB of 7.5 for the
	// pods of internal/demo, 101 MiB at 20,000. 5,000 objects bounds it to
	// about 25 MB, a second saved for at most a few hundred ms of the
	// server's work.
	DefaultVersionCheckLimit = 5000
	// minCatchUpTimeout is the shortest timeout for which kube-apiserver's
	// watch cache sends a pre-timeout bookmark (it sends it 2s before the
	// timeout, and none when that moment has passed).
	minCatchUpTimeout = 3 * time.Second
)

// DefaultBackoff returns client-go's reflector backoff: 800ms, doubling
// up to 30s, with jitter 1.0 (each wait is between d and 2d).
func DefaultBackoff() wait.Backoff {
	const initial, limit = 800 * time.Millisecond, 30 * time.Second
	return wait.Backoff{
		Duration: initial,
		Cap:      limit,
		Steps:    int(math.Ceil(float64(limit) / float64(initial))),
		Factor:   2.0,
		Jitter:   1.0,
	}
}

// WatchListPolicy says whether relists stream with WatchList.
type WatchListPolicy int

const (
	// WatchListAuto streams relists with WatchList and falls back to a
	// paginated LIST when the ListerWatcher reports it cannot
	// (IsWatchListSemanticsUnSupported, as client-go checks; no WatchList
	// is tried), or when a WatchList request fails, as client-go's
	// reflector does: the relist continues at once with a LIST. A 429 or
	// a refused connection is not a reason to list: the WatchList is sent
	// again after a backoff (at least the 429's Retry-After), as
	// client-go does.
	// When the server rejected or ignored the request
	// (ErrWatchListUnsupported) the reflector keeps using LIST for the
	// rest of its Run; after any other error its next relist tries
	// WatchList again.
	WatchListAuto WatchListPolicy = iota
	// WatchListOff always relists with a paginated LIST.
	WatchListOff
)

// ResumeCheckPolicy says how a warm start checks the stored
// resourceVersion against the server's before it resumes its watch.
type ResumeCheckPolicy int

const (
	// ResumeCheckList reads the server's current resourceVersion with one
	// consistent LIST of at most one object (ResourceVersion "", Limit 1)
	// before the resumed watch. A stored RV ahead of it (the cluster was
	// recreated, or its etcd restored from an older backup: kube-apiserver
	// accepts a watch from an RV it has not reached and sends nothing)
	// relists the most recent state instead of resuming, with a log line;
	// a stored RV equal to it is synced as soon as the watch is open,
	// without waiting ResumeSettle; a stored RV behind it resumes as
	// without the check. A failed LIST (any error: network, timeout, 5xx,
	// 429, 401 or 403) is passed to the WatchErrorHandler and retried on
	// the reflector's backoff, as a failed relist is, until the server
	// answers or Run's context ends: until then nothing is decided
	// (OnResumeDecided is not called), so an informer serves none of the
	// stored objects and is not synced. A server whose resourceVersions
	// are not kube-apiserver's integers cannot be compared: that is logged
	// and the watch resumes unchecked, without this protection.
	ResumeCheckList ResumeCheckPolicy = iota
	// ResumeCheckOff resumes the watch from the stored RV without asking
	// the server (no LIST at all on a warm start).
	ResumeCheckOff
)

// Options configures a Reflector. The zero value gives client-go's
// behaviour.
type Options struct {
	// Name identifies the reflector in logs and in the *cache.Reflector
	// passed to WatchErrorHandler. Default: the type description.
	Name string
	// TypeDescription describes the resource in logs. Default: the GVK of
	// an unstructured expectedType, else its Go type, as client-go does.
	TypeDescription string
	// ExpectedGVK, when set, drops (and logs) watch events whose object
	// has another GroupVersionKind. Default: the GVK of an
	// *unstructured.Unstructured expectedType that has one, else none.
	ExpectedGVK *schema.GroupVersionKind
	// ResumeFrom reads the persisted state of the store (store.State's
	// ResourceVersion and Complete) when Run starts. A complete state with
	// a resourceVersion other than "" and "0" is a warm start: no list,
	// a watch from that RV. An incomplete state with an RV relists not
	// older than it. Default nil: cold start.
	ResumeFrom func() (rv string, complete bool)
	// StoredVersions, when set, lets a warm start of a small store check
	// the whole stored state in the resume check: called with max (the
	// ListPageSize), it returns the key and resourceVersion of every stored
	// object and the store's key function, or ok false when the store
	// holds more than max objects. The resume check then lists a page of
	// ListPageSize objects instead of one; when that page is the whole
	// resource and the same keys at the same resourceVersions as the
	// store, nothing changed since the stored RV: the reflector pushes
	// Bookmark at the list's RV and MarkSynced once the watch from it is
	// open, with no wait for the catch-up. When the whole resource
	// changed, the page is pushed as the relist (BeginReplace, the page,
	// EndReplace at its RV), which syncs in one request. A resource that
	// has grown past the page catches up on the watch as without it.
	// Default nil: the resume check lists one object.
	StoredVersions func(max int) (versions map[string]string, keyOf cache.KeyFunc, ok bool)
	// ListVersions, when set with StoredVersions, lets a warm start of a
	// store of more than ListPageSize and at most VersionCheckLimit
	// objects compare the stored state with the server's in its resume
	// check: the check lists the metadata of every object (pages of a
	// quarter of the store, 500 to 2,000, the first one consistent, whose
	// resourceVersion is the server's R) instead of one object. When every object is at its stored
	// resourceVersion, nothing changed since the stored RV: the reflector
	// pushes Bookmark(R) and MarkSynced once the watch from R is open,
	// with no wait for the catch-up (on kube-apiserver, a bookmark about a
	// second away). Otherwise the watch resumes from the stored RV and
	// MarkSynced follows the event that brings the last differing object
	// to its state at R (or an event or bookmark at or past R, whichever
	// comes first): exact with or without bookmarks. A list that fails
	// falls back to the check of one object. It must list what the
	// ListerWatcher lists (the same namespace and selectors); one that
	// lists something else only costs the wait for R. Default nil.
	ListVersions ListVersionsFunc
	// VersionCheckLimit is the most stored objects for which a warm start
	// uses ListVersions (see there): the check's cost grows with the
	// resource, the bookmark's does not. Negative: never. Default
	// DefaultVersionCheckLimit (5,000).
	VersionCheckLimit int
	// ResumeSettle is the last resort of a warm start that has no
	// resourceVersion to reach: the resume check is off (ResumeCheckOff)
	// or the server's resourceVersions are not kube-apiserver's integers.
	// MarkSynced is then pushed at the first event of the resumed watch,
	// or once it has stayed open this long without an ERROR event
	// (kube-apiserver reports an expired RV as an ERROR event at once).
	// That is not exact: changes made while the informer was down may
	// still be arriving. Whenever the resume check read a comparable
	// resourceVersion, MarkSynced waits for the watch to reach it instead
	// (see CatchUpTimeout) and ResumeSettle is not used. It is measured on
	// Clock. Default DefaultResumeSettle (1s).
	ResumeSettle time.Duration
	// CatchUpTimeout is the server-side timeout (TimeoutSeconds) of the
	// watches of a warm start until it has caught up with the server's
	// resourceVersion read by the resume check. MarkSynced is pushed just
	// after the first event or bookmark at or past that resourceVersion;
	// kube-apiserver's watch cache sends every watch a bookmark at its
	// current resourceVersion 2s before the watch's timeout, so with a
	// short timeout a resource that did not change while the informer was
	// down syncs within about a second. Two catch-up watches in a row that
	// stay open for their whole timeout with neither an event nor a
	// bookmark show a server that sends no bookmarks (kube-apiserver with
	// --watch-cache=false): the reflector then relists the most recent
	// state, the exact way to sync there (ErrNoCatchUpSignal). A catch-up
	// watch silent 2s past its timeout that the server (or a proxy
	// dropping timeoutSeconds) keeps open counts as such; the reflector
	// ends it. Once synced, watches ask for MinWatchTimeout again. Whole seconds, at
	// least 3s (kube-apiserver sends no pre-timeout bookmark below).
	// Default DefaultCatchUpTimeout (3s).
	CatchUpTimeout time.Duration
	// ResumeCheck selects how a warm start checks the stored
	// resourceVersion against the server's. Default ResumeCheckList.
	ResumeCheck ResumeCheckPolicy
	// OnResumeDecided, if set, is called once by Run before its first list
	// or watch request that may deliver objects: ahead is true when the
	// resume check found the stored resourceVersion ahead of the server's
	// (the stored state is not the server's and is being relisted), false
	// otherwise (a cold start, a resume, the check off, or resourceVersions
	// that cannot be compared). While the check's LIST fails it is not
	// called; if Run's context ends before the check succeeds it is never
	// called. An informer holds its warm-start replay until then, so that
	// handlers never see a state the server does not have.
	OnResumeDecided func(ahead bool)
	// ListPageSize is the Limit of list requests and the most objects one
	// ReplacePage carries. A WatchList's pages start smaller and grow to
	// it: each holds at most an eighth of the objects the stream pushed
	// before it, and at least 64. Default DefaultListPageSize (500).
	ListPageSize int64
	// UseWatchList selects how relists are streamed. Default
	// WatchListAuto.
	UseWatchList WatchListPolicy
	// Backoff shapes the waits between retries; see DefaultBackoff. Its
	// Steps must be positive for the waits to grow, as with wait.Backoff.
	// Default: DefaultBackoff().
	Backoff *wait.Backoff
	// BackoffReset: after this long without a backoff, the backoff
	// restarts from its initial duration; a 410 arriving this long after
	// the previous relist relists at once. Default DefaultBackoffReset.
	BackoffReset time.Duration
	// MinWatchTimeout is the shortest server-side timeout asked for a
	// watch; each asks for a random one in [min, 2*min]. Values below
	// DefaultMinWatchTimeout (5m) are raised to it, as client-go does,
	// so that watches are not re-established often enough to load the
	// control plane. Default DefaultMinWatchTimeout.
	MinWatchTimeout time.Duration
	// MaxInternalErrorRetryDuration is how long the reflector keeps
	// re-watching from the last RV after 500 Internal Server Error
	// answers (undecodable events included) before it relists. Default 0:
	// an internal error relists, as in client-go.
	MaxInternalErrorRetryDuration time.Duration
	// Clock drives backoffs, ResumeSettle and time measurements.
	// Default: the real clock.
	Clock clock.Clock
	// WatchErrorHandler is called whenever a list or watch fails, before
	// the reflector backs off or relists (not for clean watch ends or
	// cancellation). Its *cache.Reflector argument only carries Name and
	// TypeDescription. Default DefaultWatchErrorHandler.
	WatchErrorHandler cache.WatchErrorHandlerWithContext
	// Logger is used instead of the logger of Run's context. Default: the
	// context's logger (klog.FromContext).
	Logger *klog.Logger
	// Metrics receives activity counts. Default NoopMetrics.
	Metrics Metrics
	// ListGate, when set, is shared with other reflectors (and
	// informers' replays): each relist holds one of its passes, from its
	// first request to its last page pushed (see ListGate). Default: none,
	// relists never wait for each other.
	ListGate *ListGate
}

// ErrInvalidOptions is returned by New for bad arguments or options.
var ErrInvalidOptions = errors.New("invalid reflector options")

func invalid(format string, args ...interface{}) error {
	return fmt.Errorf("reflector: %w: %s", ErrInvalidOptions, fmt.Sprintf(format, args...))
}

// withDefaults validates o and fills its defaults.
func (o Options) withDefaults(expectedType runtime.Object) (Options, error) {
	switch {
	case o.ListPageSize < 0:
		return o, invalid("ListPageSize %d is negative", o.ListPageSize)
	case o.UseWatchList != WatchListAuto && o.UseWatchList != WatchListOff:
		return o, invalid("unknown UseWatchList %d", o.UseWatchList)
	case o.BackoffReset < 0:
		return o, invalid("BackoffReset %v is negative", o.BackoffReset)
	case o.MinWatchTimeout < 0:
		return o, invalid("MinWatchTimeout %v is negative", o.MinWatchTimeout)
	case o.MaxInternalErrorRetryDuration < 0:
		return o, invalid("MaxInternalErrorRetryDuration %v is negative", o.MaxInternalErrorRetryDuration)
	case o.ResumeCheck != ResumeCheckList && o.ResumeCheck != ResumeCheckOff:
		return o, invalid("unknown ResumeCheck %d", o.ResumeCheck)
	case o.ResumeSettle < 0:
		return o, invalid("ResumeSettle %v is negative", o.ResumeSettle)
	case o.CatchUpTimeout != 0 && (o.CatchUpTimeout < minCatchUpTimeout || o.CatchUpTimeout%time.Second != 0):
		return o, invalid("CatchUpTimeout %v is not a whole number of seconds of at least %v", o.CatchUpTimeout, minCatchUpTimeout)
	}
	if o.Backoff != nil {
		b := *o.Backoff
		if b.Duration <= 0 || b.Factor < 0 || b.Jitter < 0 || b.Cap < 0 {
			return o, invalid("Backoff %+v needs a positive Duration and no negative Factor, Jitter or Cap", b)
		}
	} else {
		b := DefaultBackoff()
		o.Backoff = &b
	}
	if o.ListPageSize == 0 {
		o.ListPageSize = DefaultListPageSize
	}
	if o.BackoffReset == 0 {
		o.BackoffReset = DefaultBackoffReset
	}
	if o.MinWatchTimeout < DefaultMinWatchTimeout {
		o.MinWatchTimeout = DefaultMinWatchTimeout
	}
	if o.ResumeSettle == 0 {
		o.ResumeSettle = DefaultResumeSettle
	}
	if o.CatchUpTimeout == 0 {
		o.CatchUpTimeout = DefaultCatchUpTimeout
	}
	if o.VersionCheckLimit == 0 {
		o.VersionCheckLimit = DefaultVersionCheckLimit
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.WatchErrorHandler == nil {
		o.WatchErrorHandler = DefaultWatchErrorHandler
	}
	if o.Metrics == nil {
		o.Metrics = NoopMetrics{}
	}
	if o.TypeDescription == "" {
		o.TypeDescription = typeDescription(expectedType)
	}
	if o.Name == "" {
		o.Name = o.TypeDescription
	}
	if o.ExpectedGVK == nil {
		if u, ok := expectedType.(*unstructured.Unstructured); ok && !u.GroupVersionKind().Empty() {
			gvk := u.GroupVersionKind()
			o.ExpectedGVK = &gvk
		}
	}
	return o, nil
}

// typeDescription describes expectedType as client-go does.
func typeDescription(expectedType runtime.Object) string {
	if expectedType == nil {
		return "<unspecified>"
	}
	if u, ok := expectedType.(*unstructured.Unstructured); ok && !u.GroupVersionKind().Empty() {
		return u.GroupVersionKind().String()
	}
	return reflect.TypeOf(expectedType).String()
}
