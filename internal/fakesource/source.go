package fakesource

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/clock"
)

// Errors returned by Source's mutating methods; test with errors.Is.
var (
	// ErrInvalidObject: the object has no metadata, no name, or a kind the
	// source cannot determine.
	ErrInvalidObject = errors.New("invalid object")
	// ErrAlreadyExists: Add of a key that exists.
	ErrAlreadyExists = errors.New("object already exists")
	// ErrNotFound: Update or Delete of a key that does not exist.
	ErrNotFound = errors.New("object not found")
	// ErrInvalidResourceVersion: Compact with an RV that is not a decimal
	// number or is ahead of the source.
	ErrInvalidResourceVersion = errors.New("invalid resourceVersion")
)

// WatchListMode selects how the server treats WatchList requests
// (sendInitialEvents=true).
type WatchListMode int

const (
	// WatchListSupported serves WatchList as kube-apiserver 1.36 does.
	WatchListSupported WatchListMode = iota
	// WatchListRejected answers a WatchList request with 422 Invalid, as
	// kube-apiserver does when its WatchList feature gate is off.
	WatchListRejected
	// WatchListIgnored drops sendInitialEvents and resourceVersionMatch
	// from watch requests, as a server that predates them does: the
	// request becomes a legacy watch (no initial-events-end bookmark).
	WatchListIgnored
	// WatchListClientUnsupported serves WatchList but makes every Endpoint
	// report IsWatchListSemanticsUnSupported() == true, as client-go's
	// fake clientsets do; client-go's reflector then never asks for it.
	WatchListClientUnsupported
)

// Options configures a Source. The zero value is a kube-apiserver 1.36
// with its watch cache on.
type Options struct {
	// Scheme maps typed objects to their GroupVersionKind and creates the
	// list and bookmark objects of a kind. Kinds it does not know are
	// served as unstructured. Default: client-go's kubernetes scheme.
	Scheme *runtime.Scheme
	// Clock drives watch timeouts (ListOptions.TimeoutSeconds) and
	// periodic bookmarks. Default: the real clock.
	Clock clock.WithTicker
	// BookmarkInterval, when positive, sends a bookmark every interval to
	// each watch that allowed bookmarks. Default 0: bookmarks are sent only
	// by SendBookmark (and at the end of WatchList initial events).
	BookmarkInterval time.Duration
	// WatchList is the initial WatchListMode; SetWatchListMode changes it.
	// Default WatchListSupported.
	WatchList WatchListMode
	// ExpiredAsError makes a watch from a compacted RV fail at once with a
	// 410 error. Default false: the watch opens and delivers one ERROR
	// event carrying a metav1.Status with reason Expired, then closes, as
	// kube-apiserver's watch cache does.
	ExpiredAsError bool
	// DisableWatchCache makes the source behave as kube-apiserver with
	// --watch-cache=false: lists with resourceVersion "0" honour Limit, as
	// an apiserver listing from etcd does, and watches get no pre-timeout
	// bookmark. Default false: Limit is ignored for RV "0", and a watch
	// that allows bookmarks and asks a timeout (TimeoutSeconds) of at
	// least 3s gets a bookmark at the current RV 2s before it times out,
	// as kube-apiserver's watch cache sends one.
	DisableWatchCache bool
}

// version is one state of an object; obj is nil for a deletion.
type version struct {
	rv  int64
	obj runtime.Object
}

// event is one change in history.
type event struct {
	rv   int64
	typ  watch.EventType
	key  objKey
	obj  runtime.Object // new state; the last state for a deletion
	prev runtime.Object // state before the change; nil for an addition
}

// Source is a fake API server holding objects of any number of kinds.
// Stored objects are never mutated; everything handed out is a deep copy.
type Source struct {
	scheme           *runtime.Scheme
	clock            clock.WithTicker
	bookmarkInterval time.Duration
	expiredAsError   bool
	disableCache     bool

	// mu guards every field below.
	mu sync.Mutex
	// rv is the last resourceVersion handed out.
	rv int64
	// compacted is the oldest RV one may still list at or watch from.
	compacted int64
	// chains holds each key's versions, oldest first.
	chains map[objKey][]version
	// sorted caches each kind's keys in key order; a missing entry is
	// rebuilt on demand.
	sorted map[schema.GroupVersionKind][]objKey
	// log is the change history, in RV order. It reaches back to the
	// oldest RV that compaction or an open watch still needs.
	log []event
	// notify is closed and replaced on every change, waking waiters.
	notify chan struct{}
	// epoch counts restarts; a watch from an older epoch closes.
	epoch uint64
	// restarted is closed and replaced by Restart, interrupting watches
	// even while they wait to send.
	restarted chan struct{}
	watchers  map[*watcher]struct{}
	mode      WatchListMode
	faults    map[string][]Fault
	counts    map[schema.GroupVersionKind]*Counts
	requests  []Request
}

// New returns an empty Source whose resourceVersion is 1.
func New(opts Options) (*Source, error) {
	if opts.BookmarkInterval < 0 {
		return nil, fmt.Errorf("fakesource: BookmarkInterval %v is negative", opts.BookmarkInterval)
	}
	if opts.WatchList < WatchListSupported || opts.WatchList > WatchListClientUnsupported {
		return nil, fmt.Errorf("fakesource: unknown WatchListMode %d", opts.WatchList)
	}
	s := &Source{
		scheme:           opts.Scheme,
		clock:            opts.Clock,
		bookmarkInterval: opts.BookmarkInterval,
		expiredAsError:   opts.ExpiredAsError,
		disableCache:     opts.DisableWatchCache,
		rv:               1,
		compacted:        1,
		chains:           map[objKey][]version{},
		sorted:           map[schema.GroupVersionKind][]objKey{},
		notify:           make(chan struct{}),
		restarted:        make(chan struct{}),
		watchers:         map[*watcher]struct{}{},
		mode:             opts.WatchList,
		faults:           map[string][]Fault{},
		counts:           map[schema.GroupVersionKind]*Counts{},
	}
	if s.scheme == nil {
		s.scheme = scheme.Scheme
	}
	if s.clock == nil {
		s.clock = clock.RealClock{}
	}
	return s, nil
}

// ResourceVersion returns the source's current resourceVersion.
func (s *Source) ResourceVersion() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strconv.FormatInt(s.rv, 10)
}

// CompactedResourceVersion returns the oldest resourceVersion one may
// still list at or watch from.
func (s *Source) CompactedResourceVersion() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strconv.FormatInt(s.compacted, 10)
}

// SetWatchListMode changes how the server treats WatchList requests from
// now on.
func (s *Source) SetWatchListMode(m WatchListMode) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mode = m
}

// Add stores a copy of obj as a new object and returns its RV.
func (s *Source) Add(obj runtime.Object) (string, error) {
	return s.change(watch.Added, obj)
}

// Update stores a copy of obj as the new state of an existing object and
// returns its RV.
func (s *Source) Update(obj runtime.Object) (string, error) {
	return s.change(watch.Modified, obj)
}

// Delete removes the object with obj's kind, namespace and name and
// returns the RV of the deletion. Watchers receive its last state with
// that RV, as kube-apiserver sends it.
func (s *Source) Delete(obj runtime.Object) (string, error) {
	return s.change(watch.Deleted, obj)
}

func (s *Source) change(typ watch.EventType, obj runtime.Object) (string, error) {
	key, err := s.keyOf(obj)
	if err != nil {
		return "", fmt.Errorf("fakesource: %s: %w", typ, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	chain := s.chains[key]
	var prev runtime.Object
	if n := len(chain); n > 0 {
		prev = chain[n-1].obj
	}
	switch {
	case typ == watch.Added && prev != nil:
		return "", fmt.Errorf("fakesource: add %s %s: %w", key.gvk.Kind, key, ErrAlreadyExists)
	case typ != watch.Added && prev == nil:
		return "", fmt.Errorf("fakesource: %s %s %s: %w", typ, key.gvk.Kind, key, ErrNotFound)
	}
	rv := s.rv + 1
	var stored runtime.Object
	if typ == watch.Deleted {
		stored = prev.DeepCopyObject()
	} else {
		stored = obj.DeepCopyObject()
	}
	acc, err := meta.Accessor(stored)
	if err != nil {
		return "", fmt.Errorf("fakesource: %s %s: %w: %v", typ, key, ErrInvalidObject, err)
	}
	acc.SetResourceVersion(strconv.FormatInt(rv, 10))
	s.rv = rv
	if len(chain) == 0 {
		delete(s.sorted, key.gvk)
	}
	v := version{rv: rv, obj: stored}
	if typ == watch.Deleted {
		v.obj = nil
	}
	s.chains[key] = append(chain, v)
	s.log = append(s.log, event{rv: rv, typ: typ, key: key, obj: stored, prev: prev})
	s.broadcastLocked()
	return strconv.FormatInt(rv, 10), nil
}

// Get returns a copy of the current state of an object.
func (s *Source) Get(gvk schema.GroupVersionKind, namespace, name string) (runtime.Object, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	chain := s.chains[objKey{gvk: gvk, namespace: namespace, name: name}]
	if len(chain) == 0 || chain[len(chain)-1].obj == nil {
		return nil, false
	}
	return chain[len(chain)-1].obj.DeepCopyObject(), true
}

// Objects returns copies of the current objects of a kind, in key order.
func (s *Source) Objects(gvk schema.GroupVersionKind) []runtime.Object {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []runtime.Object
	for _, k := range s.sortedKeysLocked(gvk) {
		if obj := s.versionAtLocked(k, s.rv); obj != nil {
			out = append(out, obj.DeepCopyObject())
		}
	}
	return out
}

// Compact discards history older than rv: lists at an older RV, watches
// from an older RV and continue tokens of older snapshots fail with 410
// Expired afterwards. Open watches are not affected.
func (s *Source) Compact(rv string) error {
	n, err := strconv.ParseInt(rv, 10, 64)
	if err != nil || n < 0 {
		return fmt.Errorf("fakesource: compact %q: %w", rv, ErrInvalidResourceVersion)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if n > s.rv {
		return fmt.Errorf("fakesource: compact %d beyond current %d: %w", n, s.rv, ErrInvalidResourceVersion)
	}
	s.compactLocked(n)
	return nil
}

func (s *Source) compactLocked(n int64) {
	if n <= s.compacted {
		return
	}
	s.compacted = n
	for k, chain := range s.chains {
		// Keep the last version at or before n as the base.
		i := sort.Search(len(chain), func(i int) bool { return chain[i].rv > n })
		if i == 0 {
			continue
		}
		chain = chain[i-1:]
		if len(chain) == 1 && chain[0].obj == nil {
			delete(s.chains, k)
			delete(s.sorted, k.gvk)
			continue
		}
		s.chains[k] = append([]version(nil), chain...)
	}
	s.trimLogLocked()
	s.broadcastLocked()
}

// trimLogLocked drops history that neither compaction nor an open watch
// still needs.
func (s *Source) trimLogLocked() {
	low := s.compacted
	for w := range s.watchers {
		if w.cursor < low {
			low = w.cursor
		}
	}
	i := sort.Search(len(s.log), func(i int) bool { return s.log[i].rv > low })
	if i > 0 {
		s.log = append([]event(nil), s.log[i:]...)
	}
}

// Restart simulates an apiserver restart: every open watch closes (its
// result channel closes, as when the connection drops) and all history
// before the current RV is compacted, so watches and lists at older RVs
// get 410 Expired. It returns once every watch that was open has closed
// its channel; a consumer reading concurrently may still receive the one
// event that was in flight.
func (s *Source) Restart() {
	s.mu.Lock()
	s.epoch++
	close(s.restarted)
	s.restarted = make(chan struct{})
	s.compactLocked(s.rv)
	s.broadcastLocked()
	open := make([]*watcher, 0, len(s.watchers))
	for w := range s.watchers {
		open = append(open, w)
	}
	s.mu.Unlock()
	for _, w := range open {
		<-w.done
	}
}

// SendBookmark asks every open watch that allowed bookmarks to send one as
// soon as it has delivered every event up to the current RV. It returns
// the number of watches asked.
func (s *Source) SendBookmark() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for w := range s.watchers {
		if w.allowBookmarks {
			w.bookmarkPending = true
			n++
		}
	}
	s.broadcastLocked()
	return n
}

// broadcastLocked wakes everything waiting on the source.
func (s *Source) broadcastLocked() {
	close(s.notify)
	s.notify = make(chan struct{})
}

// versionAtLocked returns the state of k at rv, nil when absent.
func (s *Source) versionAtLocked(k objKey, rv int64) runtime.Object {
	chain := s.chains[k]
	i := sort.Search(len(chain), func(i int) bool { return chain[i].rv > rv })
	if i == 0 {
		return nil
	}
	return chain[i-1].obj
}

// sortedKeysLocked returns every key of a kind that has history, in key
// order. The slice is shared; callers must not modify it.
func (s *Source) sortedKeysLocked(gvk schema.GroupVersionKind) []objKey {
	if keys, ok := s.sorted[gvk]; ok {
		return keys
	}
	var keys []objKey
	for k := range s.chains {
		if k.gvk == gvk {
			keys = append(keys, k)
		}
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].less(keys[j]) })
	s.sorted[gvk] = keys
	return keys
}
