package deltafifo

import "k8s.io/client-go/tools/cache"

// segment is one element of the queue: a deltas segment (deltas
// accumulated per key), or one replace page, or one marker. Consecutive
// deltas pushes go to the same deltas segment; a marker or a page ends it.
// A segment is owned by the Queue and only touched with its lock held.
type segment struct {
	kind Kind

	// initial is set on the segments of the initial replace.
	initial bool
	// gen is the replace generation of replace segments.
	gen uint64

	// rv is, for KindDeltas, the queue's last resourceVersion when the
	// segment last received an event (its safe RV once drained); for
	// KindReplaceEnd, the list's resourceVersion.
	rv string

	// keys[head:] are the queued keys of a KindDeltas segment in
	// first-arrival order; items holds their deltas.
	keys  []string
	head  int
	items map[string]entry

	// objs are the unpopped objects of a KindReplacePage segment.
	objs []interface{}
}

// entry is one key's accumulation in a deltas segment.
type entry struct {
	deltas cache.Deltas
	// prevRV is the queue's last resourceVersion just before the key's
	// first event in this segment: every event with a resourceVersion not
	// newer than it was pushed before the key entered the segment.
	prevRV string
}

func newDeltasSegment(rv string) *segment {
	return &segment{kind: KindDeltas, rv: rv, items: make(map[string]entry)}
}

// addDelta appends d to key's deltas (deduplicating consecutive deletes as
// client-go's DeltaFIFO does) and returns the change in the number of
// deltas the segment holds (1, or 0 when a delete was deduplicated).
// prevRV is recorded if the key is new to the segment.
func (s *segment) addDelta(key string, d cache.Delta, prevRV string) int {
	e, ok := s.items[key]
	if !ok {
		s.keys = append(s.keys, key)
		e.prevRV = prevRV
	}
	n := len(e.deltas)
	e.deltas = dedupDeltas(append(e.deltas, d))
	s.items[key] = e
	return len(e.deltas) - n
}

// queuedKeys returns the number of keys still queued in a deltas segment.
func (s *segment) queuedKeys() int {
	return len(s.keys) - s.head
}

// take removes the first n keys of a deltas segment and returns them with
// their deltas and the number of deltas removed.
func (s *segment) take(n int) (keys []string, deltas []cache.Deltas, count int) {
	if n == 0 {
		return nil, nil, 0
	}
	// The returned keys share the array: the segment never writes below
	// head again, and compact copies into a new array.
	keys = s.keys[s.head : s.head+n : s.head+n]
	deltas = make([]cache.Deltas, n)
	for i, k := range keys {
		deltas[i] = s.items[k].deltas
		count += len(deltas[i])
		delete(s.items, k)
	}
	s.head += n
	s.compact()
	return keys, deltas, count
}

// compact drops popped keys once they make up most of the array, so that a
// segment that is popped while it grows does not grow without bound.
func (s *segment) compact() {
	if s.head < 1024 || s.head*2 < len(s.keys) {
		return
	}
	rest := make([]string, len(s.keys)-s.head, max(len(s.keys)-s.head, 16))
	copy(rest, s.keys[s.head:])
	s.keys, s.head = rest, 0
}

// dedupDeltas collapses the two newest deltas if both are deletions,
// keeping the one with the most information: a real final state wins over
// a cache.DeletedFinalStateUnknown (client-go's dedupDeltas).
func dedupDeltas(deltas cache.Deltas) cache.Deltas {
	n := len(deltas)
	if n < 2 {
		return deltas
	}
	a, b := &deltas[n-1], &deltas[n-2]
	if a.Type != cache.Deleted || b.Type != cache.Deleted {
		return deltas
	}
	if _, ok := b.Object.(cache.DeletedFinalStateUnknown); ok {
		*b = *a
	}
	deltas[n-1] = cache.Delta{}
	return deltas[:n-1]
}
