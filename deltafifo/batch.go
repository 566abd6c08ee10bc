package deltafifo

import (
	"fmt"

	"k8s.io/client-go/tools/cache"
)

// Kind says what a Batch carries.
type Kind int

const (
	// KindDeltas carries the accumulated deltas of up to max keys of one
	// deltas segment (Batch.Keys, Batch.Deltas) and the safe
	// resourceVersion to persist with them (Batch.ResourceVersion). It may
	// carry no keys at all: a bookmark that arrived while nothing else was
	// queued yields such a batch so that its resourceVersion is persisted.
	KindDeltas Kind = iota
	// KindReplaceBegin starts a relist: the consumer opens a store replace.
	KindReplaceBegin
	// KindReplacePage carries listed objects (Batch.Objects) of the open
	// relist.
	KindReplacePage
	// KindReplaceEnd ends a relist: the listed objects are the complete
	// state at Batch.ResourceVersion (the list's resourceVersion).
	KindReplaceEnd
	// KindReplaceAbort says the relist whose KindReplaceBegin was popped
	// was abandoned by the producer: the consumer discards what it staged.
	KindReplaceAbort
	// KindSynced is the marker pushed by MarkSynced: on a warm start the
	// watch resumed from the persisted resourceVersion, so the stored
	// state is caught up with the server as far as the producer knows.
	KindSynced
)

var kindNames = [...]string{
	KindDeltas:       "Deltas",
	KindReplaceBegin: "ReplaceBegin",
	KindReplacePage:  "ReplacePage",
	KindReplaceEnd:   "ReplaceEnd",
	KindReplaceAbort: "ReplaceAbort",
	KindSynced:       "Synced",
}

// String returns the kind's name.
func (k Kind) String() string {
	if k >= 0 && int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Batch is what Pop returns: one unit of work for the consumer. Which fields
// are set depends on Kind; the others are zero.
//
// Ownership: the slices of a Batch belong to the caller; the queue keeps no
// reference to them. The objects in them are shared with the producer that
// pushed them and with whatever the consumer stores them in: nobody may
// mutate them (as in client-go).
type Batch struct {
	// Kind says which fields are set.
	Kind Kind

	// Keys are the keys of a KindDeltas batch in queue order (the order in
	// which each key first entered its segment); Deltas[i] belongs to
	// Keys[i]. Each key appears once.
	Keys []string
	// Deltas holds, for each key, every delta accumulated for it in the
	// segment, oldest first (client-go DeltaFIFO semantics: consecutive
	// deletes deduplicated). Delta types are cache.Added, cache.Updated,
	// cache.Deleted and cache.Sync; a Deleted delta's object may be a
	// cache.DeletedFinalStateUnknown, and a Sync delta's object is its key,
	// a cache.ExplicitKey (the consumer notifies with the object it holds).
	Deltas []cache.Deltas

	// Objects are the listed objects of a KindReplacePage batch, with the
	// Transformer already applied.
	Objects []interface{}

	// ResourceVersion is, for KindDeltas, the safe resourceVersion: every
	// event pushed with a resourceVersion not newer than it has been
	// popped, by this batch or an earlier one, so the consumer may persist
	// it once this batch (and every earlier one) is applied. Empty means
	// no resourceVersion is known yet: the consumer keeps the one it has
	// (with store.Store.Apply, pass the stored one: an empty rv there
	// records the last object's, which may run ahead). It happens only
	// before any event with a resourceVersion was pushed (when
	// Options.InitialResourceVersion is empty) or after an EndReplace
	// with an empty list resourceVersion. The batch may also contain
	// deltas newer than it (see the package documentation).
	// For KindReplaceEnd it is the list's resourceVersion. Empty for the
	// other kinds.
	ResourceVersion string

	// IsInInitialList is true for the batches of the initial relist (the
	// replace begun before anything that completes the initial sync was
	// pushed, when Options.InitialResourceVersion is empty); handlers are
	// told so on their Add notifications.
	IsInInitialList bool
}

// Len returns the number of keys (KindDeltas) or objects (KindReplacePage)
// in the batch.
func (b Batch) Len() int {
	return len(b.Keys) + len(b.Objects)
}
