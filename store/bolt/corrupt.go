package bolt

import (
	"errors"
	"fmt"

	"github.com/warmcache/warmcache/store/bolt/internal/layout"
	"github.com/warmcache/warmcache/store/bolt/internal/syncstate"
)

// keyError is an item that failed to decode, or whose stored bytes do not
// match their checksum.
type keyError struct {
	key string
	err error
}

// errIndexWithoutItem is wrapped by the error of an index entry that names
// a key without an item.
var errIndexWithoutItem = errors.New("index entry without an item")

// corruptPart names the part of the data err found corrupt, for the
// corrupt objects metric: the part whose checksum failed, "index" for an
// index entry without its item, else "envelope" (an envelope or payload
// that does not decode, a missing envelope).
func corruptPart(err error) string {
	if p := layout.PartOf(err); p != "" {
		return p
	}
	if errors.Is(err, errIndexWithoutItem) {
		return layout.PartIndex
	}
	return layout.PartEnvelope
}

// countCorrupt counts a corrupt record of part (Metrics.CorruptRecord).
func (s *Store) countCorrupt(part string) { s.db.metrics.CorruptRecord(s.name, part) }

// corrupted handles items that failed to decode or whose checksum did not
// match during op: it logs and counts each
// (warmcache_store_corrupt_objects_total), marks the resource incomplete
// (in the file, so that the next start relists) and calls OnCorruption. It
// must be called without s.mu held.
func (s *Store) corrupted(op string, bad []keyError) {
	if len(bad) == 0 {
		return
	}
	for _, b := range bad {
		part := corruptPart(b.err)
		s.countCorrupt(part)
		s.logger.Error(b.err, "Skipping an object that cannot be decoded; the resource is marked incomplete", "op", op, "key", b.key, "part", part)
	}
	err := s.errorf(op, bad[0].err)
	s.markIncomplete(fmt.Sprintf("%s: %d objects could not be decoded, first %q: %v", op, len(bad), bad[0].key, bad[0].err))
	if s.onCorrupt != nil {
		s.onCorrupt(err)
	}
}

// markIncomplete records that the items are no longer a complete picture.
func (s *Store) markIncomplete(reason string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed.Load() || s.meta.State != layout.StateComplete {
		return
	}
	if s.readOnly {
		m := s.meta.Clone()
		m.State, m.Reason = layout.StateIncomplete, reason
		s.setMetaLocked(m)
		return
	}
	err := s.writeLiveLocked("mark incomplete", func(_ *layout.Generation, m *layout.Meta) error {
		m.State, m.Reason = layout.StateIncomplete, reason
		return nil
	})
	if err != nil {
		s.logger.Error(err, "Failed to record the resource as incomplete")
		m := s.meta.Clone()
		m.State, m.Reason = layout.StateIncomplete, reason
		s.setMetaLocked(m)
	}
}

// reportCorrupt handles corruption found in the open file, by the file
// check or by a read (a bbolt panic, a fault of the mapping), once: it is
// logged with the reason, recorded in the state file beside the file (so
// that the next Open returns ErrCorrupt and the caller moves the file
// aside), every open resource is marked incomplete and its OnCorruption
// called (the informer relists), and it is reported by FileCheck and the
// metrics. Only the first report does anything. It does not block and
// takes no store lock: it may be called from inside a transaction or a
// decoding goroutine.
func (db *DB) reportCorrupt(err error) {
	if !db.corrupt.CompareAndSwap(nil, &err) {
		return
	}
	db.logger.Error(err, "The cache file is corrupt: its resources are marked incomplete and relisted, and the next open moves it aside")
	db.fcm.Corrupt()
	db.mu.Lock()
	defer db.mu.Unlock()
	if db.closed {
		return // Close records it
	}
	stores := make([]*Store, 0, len(db.stores))
	for _, s := range db.stores {
		stores = append(stores, s)
	}
	db.bg.Go(func() {
		if !db.opts.ReadOnly {
			if werr := db.recordCorrupt(err); werr != nil {
				db.logger.Error(werr, "Cannot record the cache file as corrupt in its state file")
			}
		}
		for _, s := range stores {
			s.fileCorrupted(err)
		}
	})
}

// recordCorrupt records in the state file that the file is corrupt, unless
// path no longer names the file Open locked.
func (db *DB) recordCorrupt(cause error) error {
	if !db.pathNamesFile() {
		return nil
	}
	return writeState(db.path, syncstate.State{State: syncstate.Corrupt, Reason: cause.Error()}, db.opts.FileMode)
}

// fileCorrupted marks s incomplete and calls its OnCorruption after the
// file was found corrupt, the first time only: DB.Resource calls it for a
// corruption found before the store was registered, and the report of a
// corruption found meanwhile may already have called it.
func (s *Store) fileCorrupted(err error) {
	if !s.fileCorrupt.CompareAndSwap(false, true) {
		return
	}
	s.markIncomplete(fmt.Sprintf("the cache file is corrupt: %v", err))
	if s.onCorrupt != nil {
		s.onCorrupt(s.errorf("file check", err))
	}
}
