package bolt

import (
	"github.com/warmcache/warmcache/store"
	"github.com/warmcache/warmcache/store/bolt/internal/layout"
)

var _ store.UncachedReader = (*Store)(nil)

// GetByKeyUncached returns the object stored under key like GetByKey,
// for a writer (the informer reading the old object of an update or of a
// resync): an object already in the hot tier is used, but the
// cache is neither filled nor reordered, so that a writer's reads never
// evict what listers read. See store.UncachedReader.
func (s *Store) GetByKeyUncached(key string) (item interface{}, exists bool, err error) {
	const op = "get uncached"
	var bad error
	err = s.readLive(op, func(g *layout.Generation) error {
		k := []byte(key)
		v := g.Items.Get(k)
		if v == nil {
			return nil
		}
		item, bad = s.readEntry(g, k, v)
		exists = bad == nil
		return nil
	})
	if err != nil {
		return nil, false, err
	}
	if bad != nil {
		s.corrupted(op, []keyError{{key, bad}})
		return nil, false, s.errorf(op, bad)
	}
	return item, exists, nil
}
