package bolt

import (
	"github.com/warmcache/warmcache/store"
	"github.com/warmcache/warmcache/store/bolt/internal/decode"
	"github.com/warmcache/warmcache/store/bolt/internal/layout"
)

var (
	_ store.UncachedReader = (*Store)(nil)
	_ store.StatesReader   = (*Store)(nil)
)

// GetByKeyUncached is GetByKey for a writer (store.UncachedReader): it takes
// an object the hot tier holds but neither fills nor reorders it.
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

// ReadStates implements store.StatesReader, in one transaction, past the
// hot tier as GetByKeyUncached.
func (s *Store) ReadStates(keys []string, want func(i int, rv string) bool) ([]store.StoredState, error) {
	if want == nil {
		return s.ReadStatesLike(keys, nil)
	}
	return s.ReadStatesLike(keys, func(i int, rv string) (bool, interface{}) { return want(i, rv), nil })
}

// ReadStatesLike implements store.LikeStatesReader.
func (s *Store) ReadStatesLike(keys []string, want func(i int, rv string) (bool, interface{})) ([]store.StoredState, error) {
	const op = "read states"
	states := make([]store.StoredState, len(keys))
	var bad []keyError
	err := s.readLive(op, func(g *layout.Generation) error {
		var chunk []selected
		var at []int // index in keys of each chunk entry
		for i, key := range keys {
			k := []byte(key)
			env, rv, err := lookupRV(g, k)
			if err != nil {
				bad = append(bad, keyError{key, err})
				continue
			}
			if env == nil {
				continue
			}
			states[i].RV, states[i].Exists = rv, true
			if want == nil {
				continue
			}
			if ok, like := want(i, rv); ok {
				c := s.selectedOf(key, k, env)
				if c.env != nil {
					c.share = decode.SharingWith(s.codec, like)
				}
				chunk = append(chunk, c)
				at = append(at, i)
			}
		}
		if len(bad) > 0 || len(chunk) == 0 {
			return nil
		}
		errs := s.decodeSelected(chunk, 0)
		for j := range chunk {
			if errs != nil && errs[j] != nil {
				bad = append(bad, keyError{chunk[j].key, errs[j]})
				continue
			}
			states[at[j]].Obj = chunk[j].obj
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(bad) > 0 {
		s.corrupted(op, bad)
		return nil, s.errorf(op, bad[0].err)
	}
	return states, nil
}
