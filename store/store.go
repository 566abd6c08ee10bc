// Package store defines the contract shared by warmcache's stores.
//
// A Store is a client-go cache.Indexer and cache.TransactionStore, so typed
// listers (corelisters.NewPodLister(s)) and anything else written against
// client-go's tools/cache work on it unchanged. On top of that it adds what a
// persistent cache needs:
//
//   - Apply: a batch of changes and the resourceVersion they reach, as one
//     atomic step (invariant 1).
//   - State: the recorded RV and whether the stored items are a complete,
//     consistent picture of the server at that RV.
//   - BeginReplace: a relist written in bounded pages yet committed
//     atomically (invariant 2); the replaced content is retained after the
//     commit until the caller releases it, so that the differences (adds,
//     updates with their old objects, deletions with their last state)
//     can be streamed to handlers without holding them in memory.
//   - Filler (optional): the relist of an empty store written in place,
//     page by page, so that listers see the content grow and the informer
//     tells the handlers of each page's objects as it is written, as
//     client-go's informer fills its indexer during the initial list,
//     without reading the content back after the commit. The store is
//     marked incomplete, with no resourceVersion, until the fill commits;
//     a crash before that discards the partial content (invariant 2).
//   - Scan and ScanIndex: stream objects without materialising the whole set.
//   - ResourceVersionOf: an object's RV without decoding it, for relist diffs.
//
// Two implementations exist: store/memory (the reference behaviour, objects
// on the Go heap) and store/bolt (objects encoded in a bbolt file). The
// package store/storetest holds the contract tests both must pass.
//
// The invariants cited by number are those of the repository's
// ARCHITECTURE.md.
//
// Ownership: objects passed to a Store belong to it afterwards and objects
// returned by it are shared; neither the store nor its callers may mutate
// them (invariant 6, as in client-go). A bolt store may hand the same decoded object to
// several readers (it keeps a cache of decoded objects for point reads).
package store

import (
	"context"
	"errors"

	"k8s.io/client-go/tools/cache"
)

// Store is the contract both warmcache stores implement. All methods are
// safe for concurrent use.
//
// The cache.Indexer methods follow client-go's semantics exactly: Add,
// Update and Delete record the object's resourceVersion as the store's
// LastStoreSyncResourceVersion; Replace swaps the whole content and records
// the given RV; Bookmark records an RV without changing items. Methods of
// cache.Indexer that cannot return an error (List, ListKeys,
// ListIndexFuncValues, Bookmark) log failures of a persistent store and mark
// its state incomplete, so that the next start relists instead of trusting it.
type Store interface {
	cache.Indexer
	cache.TransactionStore

	// Apply applies txns in order and records rv as the store's
	// resourceVersion, in one atomic step: after a crash either all of it
	// is visible or none. An empty rv records the resourceVersion of the
	// last object in txns (client-go's Transaction semantic); empty txns
	// with a non-empty rv records a bookmark. Transaction types are
	// cache.TransactionTypeAdd, Update (both upsert) and Delete (removes
	// the key of the object, which may be a cache.DeletedFinalStateUnknown;
	// deleting an absent key is not an error). A key error for any object
	// fails the whole batch with nothing applied.
	Apply(ctx context.Context, txns []cache.Transaction, rv string) error

	// State reports the recorded resourceVersion and the health of the
	// stored data.
	State() (State, error)

	// BeginReplace starts a relist. The caller adds the listed objects in
	// pages with Replace.Add, optionally reads Replace.Vanished, and ends
	// with Commit (the new content and its RV become visible atomically)
	// or Abort. Until Commit, readers see the previous content. After
	// Commit the previous content is retained, for Replace.Changes, until
	// Release (or Abort). At most one Replace may be open at a time; a
	// second BeginReplace before Commit or Abort returns
	// ErrReplaceInProgress, and one after Commit releases the retained
	// content first. cache.Store's Replace is implemented with it.
	BeginReplace(ctx context.Context) (Replace, error)

	// Scan calls fn for every stored object, in key order, without
	// holding the whole set in memory. It stops at the first error fn
	// returns and returns it. fn must not call methods that write to the
	// store. Objects passed to fn follow the package's ownership rules.
	Scan(ctx context.Context, fn ScanFunc) error

	// ScanIndex calls fn for every object whose indexedValue set for
	// indexName contains indexedValue, in key order. An unknown index
	// returns an error wrapping ErrIndexNotFound.
	ScanIndex(ctx context.Context, indexName, indexedValue string, fn ScanFunc) error

	// KeyFunc returns the store's key function. The queue and the
	// informer key objects with it, so that a store configured with its
	// own key function keys relist diffs and deltas the same way. Call it
	// through KeyOf, which turns its panics into errors.
	KeyFunc() cache.KeyFunc

	// ResourceVersionOf returns the resourceVersion of the object stored
	// under key without decoding it.
	ResourceVersionOf(key string) (rv string, exists bool, err error)

	// Close releases the store. Methods called after Close return
	// ErrClosed (or, for those without an error result, nothing).
	Close() error
}

// ScanFunc receives one stored object and its key.
type ScanFunc func(key string, obj interface{}) error

// Replace is an open relist; see Store.BeginReplace. Its methods are not
// safe for concurrent use with each other.
//
// Its life: Add (any number of pages), Vanished (optional), then Commit or
// Abort. Commit makes the new content live and retains the replaced one;
// Changes then streams the differences between the two, and Release drops
// the replaced content. A persistent store retains it in the file, not on
// the heap, and a crash before Release leaves the committed content (the
// retained one is dropped when the store is opened again).
type Replace interface {
	// Add stages listed objects. A persistent store writes each call in its
	// own bounded transaction; memory stays proportional to one page.
	Add(ctx context.Context, objs ...interface{}) error
	// Vanished calls fn for every object of the current content whose key
	// was not staged, with its last stored state. Call it after the last
	// Add and before Commit.
	Vanished(ctx context.Context, fn ScanFunc) error
	// Commit makes the staged objects the store's content and rv its
	// resourceVersion, atomically, and marks the state complete. The
	// replaced content is retained until Release or Abort.
	Commit(ctx context.Context, rv string) error
	// Changes calls fn, in key order, for every key whose stored object
	// differs between the content Commit replaced and the current one:
	// a key only in the current content (Old nil), a key in both with
	// another resourceVersion (both set; equal resourceVersions are
	// unchanged, and objects without metadata, which have none, always
	// differ), a key only in the replaced content (New nil, Old its last
	// state). Objects are read in bounded chunks, so that memory
	// stays proportional to a chunk, and fn is called without locks held
	// (it may read the store; writes made meanwhile may or may not be
	// seen). An object of the replaced content that cannot be read is
	// logged and skipped. It stops at the first error fn returns and
	// returns it. Call it after Commit and before Release; otherwise it
	// returns an error wrapping ErrReplaceDone.
	Changes(ctx context.Context, fn ChangeFunc) error
	// Release drops the content retained by Commit. It is a no-op before
	// Commit (use Abort), after Release or Abort, and after Close.
	Release() error
	// Abort discards the staged objects; the content is unchanged. After
	// Commit it does not undo the commit: it releases the retained
	// content, as Release does. It is a no-op after Release or Close.
	Abort() error
}

// Filler is an optional ability of a store: a relist of an empty store
// written in place (see Fill). The informer uses it for a relist that
// starts with an empty store (a cold start), so that each page is in the
// store, and visible to readers, before the handlers are told of its
// objects, and nothing is read back after the commit.
type Filler interface {
	// BeginFill starts a fill of the store, which must be empty: a
	// store holding objects returns an error wrapping ErrNotEmpty. At
	// most one Fill or Replace may be open at a time: BeginFill while
	// either is open returns ErrReplaceInProgress, and BeginReplace
	// and AddIndexers while a Fill is open do too (the pages written
	// so far were indexed with the fill's indexers). BeginFill after a committed
	// Replace releases the content that Replace retained.
	//
	// From BeginFill until the Fill's Commit the store's state is
	// incomplete with no resourceVersion (State().Complete false,
	// ResourceVersion ""). A persistent store records that mark in the
	// same transaction, and an open that finds it (the process died
	// before Commit) discards the content and reports
	// State().RelistInterrupted: a partial fill is never served as
	// valid nor resumed from (invariant 2).
	BeginFill(ctx context.Context) (Fill, error)
}

// Fill is an open fill of an empty store; see Filler. Its methods are not
// safe for concurrent use with each other.
//
// Its life: Add (any number of pages), then Commit or Abort. Unlike a
// Replace's Add, a Fill's Add writes to the store's content: once it
// returns, the objects are visible to every reader (a persistent store
// commits each call in its own bounded transaction). Commit records the
// resourceVersion and marks the content complete. Abort ends the fill and
// keeps what was added as the store's content, still marked incomplete
// (across restarts too) and with no resourceVersion: whoever was told of
// the added objects (the informer's handlers) keeps agreeing with the
// store, and the next relist is a Replace whose Changes diff against that
// content; its Commit clears the mark. Other writes made while a Fill is
// open (the informer makes none) go to the same content; a persistent
// store discards them with it if the process dies before Commit.
type Fill interface {
	// Add writes objs to the store's content, keyed as the store keys
	// them, indexed as it indexes them. A key, encoding or index
	// function error writes none of objs and leaves the Fill open. A
	// key added twice keeps the last object.
	Add(ctx context.Context, objs ...interface{}) error
	// Commit records rv as the store's resourceVersion and marks the
	// content complete, atomically. A failed commit leaves the Fill
	// open: the caller may retry or Abort.
	Commit(ctx context.Context, rv string) error
	// Abort ends the fill, keeping the added objects as the store's
	// content, marked incomplete. It is a no-op after Commit, Abort or
	// Close.
	Abort() error
}

// Change is one difference between the content a Replace's Commit
// replaced and the current one; see Replace.Changes. Old is nil for an
// added key, New nil for a vanished one.
type Change struct {
	Key      string
	Old, New interface{}
}

// ChangeFunc receives one Change.
type ChangeFunc func(c Change) error

// UncachedReader is implemented by stores that keep decoded objects for
// readers (a persistent store's cache of point reads): GetByKeyUncached
// returns the object stored under key like GetByKey, without adding to
// that cache or changing which objects it keeps, so that a writer (the
// informer reading the old object of an update) neither pays for nor
// evicts what listers use. A store without such a cache returns what
// GetByKey returns. Use it through GetUncached.
type UncachedReader interface {
	GetByKeyUncached(key string) (obj interface{}, exists bool, err error)
}

// GetUncached returns s's object under key through UncachedReader when s
// implements it, or GetByKey.
func GetUncached(s cache.KeyGetter, key string) (interface{}, bool, error) {
	if u, ok := s.(UncachedReader); ok {
		return u.GetByKeyUncached(key)
	}
	return s.GetByKey(key)
}

// StoredState is what a store holds under one key, as ReadStates reads it.
type StoredState struct {
	// Exists reports whether the key is stored.
	Exists bool
	// RV is the stored object's resourceVersion as the store recorded it
	// (see Store.ResourceVersionOf), "" when the key is not stored.
	RV string
	// Obj is the stored object when ReadStates was asked for it, else nil.
	Obj interface{}
}

// StatesReader is implemented by stores that read the state of many keys
// in one consistent view, cheaper than a ResourceVersionOf and a
// GetUncached per key: the informer reads each batch's keys so. ReadStates
// returns the state of each of keys, indexed like keys, and the stored
// object of each stored key for which want(i, rv) is true, read like
// GetUncached reads it. Any key that cannot be read fails the whole call
// with its error (wrapping ErrCorrupt for damaged data).
type StatesReader interface {
	ReadStates(keys []string, want func(i int, rv string) bool) ([]StoredState, error)
}

// LikeStatesReader is a StatesReader that can decode each wanted stored
// object sharing, with the object about to replace it, what the two
// encode alike (package store/codec's Sharing): most of an update's old
// object is then taken from the new one instead of decoded. The informer
// reads the old objects of its updates so. ReadStatesLike is ReadStates
// whose want also returns that object, or nil. The objects returned share
// memory with those given: neither may be changed (which objects an
// informer hands out never are).
type LikeStatesReader interface {
	StatesReader
	ReadStatesLike(keys []string, want func(i int, rv string) (bool, interface{})) ([]StoredState, error)
}

// SharedChanges is implemented by a Replace whose Changes can decode the
// Old of a key in both contents sharing with its New what the two encode
// alike (package store/codec's Sharing), as LikeStatesReader decodes an
// update's old object: the informer reads a relist's changes so, unless
// told not to share (informer.Options.UnsharedOldObjects). ChangesShared
// is Changes with that sharing. Old and New may then share memory:
// neither may be changed.
type SharedChanges interface {
	ChangesShared(ctx context.Context, fn ChangeFunc) error
}

// State describes what a store holds.
type State struct {
	// ResourceVersion is the RV the stored items are consistent with: a
	// watch may resume from it. Empty when the store was never synced.
	ResourceVersion string
	// Complete is true when the items are a complete picture of the
	// server at ResourceVersion. A warm start is allowed only then; any
	// other state needs a relist.
	Complete bool
	// RelistInterrupted is true when a Replace was begun and not committed
	// in an earlier process; its staged data was discarded and the
	// previous content kept. It is true too when a Fill was begun and not
	// committed (or aborted and not followed by a committed Replace): its
	// content was discarded, and the store is empty.
	RelistInterrupted bool
	// Discarded, when not empty, says why stored data was thrown away when
	// the store was opened (schema, identity, codec or index mismatch,
	// corruption).
	Discarded string
	// Objects is the number of stored objects.
	Objects int
}

// Errors common to all stores. Implementations wrap them with the operation
// and key; test with errors.Is.
var (
	// ErrClosed is returned by methods called after Close.
	ErrClosed = errors.New("store is closed")
	// ErrIndexNotFound is returned for an index name the store was not
	// given.
	ErrIndexNotFound = errors.New("index does not exist")
	// ErrIndexConflict is returned by AddIndexers for a name that exists.
	ErrIndexConflict = errors.New("indexer conflict")
	// ErrReplaceInProgress is returned by BeginReplace and
	// Filler.BeginFill while another Replace or Fill is open.
	ErrReplaceInProgress = errors.New("a replace is already in progress")
	// ErrReplaceDone is returned by Replace and Fill methods after
	// Commit or Abort.
	ErrReplaceDone = errors.New("replace already committed or aborted")
	// ErrNotEmpty is returned by Filler.BeginFill for a store that holds
	// objects.
	ErrNotEmpty = errors.New("store is not empty")
	// ErrCorrupt is returned when stored data cannot be read back: a
	// persistent store's file or one of its objects is damaged. The
	// store marks itself incomplete, so that the next start relists; an
	// informer that meets it relists at once (invariant 5).
	ErrCorrupt = errors.New("cache file is corrupt")
	// ErrIndexFunc wraps an error returned by an index function, or a
	// panic in it; the function's own error is wrapped too. The write is
	// not applied.
	ErrIndexFunc = errors.New("index function failed")
	// ErrTransactionType is returned for a cache.Transaction whose Type
	// is not Add, Update or Delete. Nothing of the batch is applied.
	ErrTransactionType = errors.New("unknown transaction type")
)
