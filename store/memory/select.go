package memory

import (
	"context"
	"fmt"

	"k8s.io/client-go/tools/cache"

	"github.com/warmcache/warmcache/store"
)

var _ store.SelectStore = (*Store)(nil)

// Select calls fn for every object sel selects, in key order, on a
// snapshot taken under the read lock (as Scan). It starts from the
// smallest set an index gives (sel's index, else the namespace index when
// the store has one) and filters the rest by namespace and labels.
func (s *Store) Select(ctx context.Context, sel store.Selection, fn store.ScanFunc) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("memory: select: %w", err)
	}
	s.mu.RLock()
	if s.closed {
		s.mu.RUnlock()
		return errClosed("select")
	}
	var kvs []keyValue
	keep := func(k string, obj interface{}) error {
		ok, err := sel.Matches(obj)
		if err != nil {
			return fmt.Errorf("memory: select: key %q: %w", k, err)
		}
		if ok {
			kvs = append(kvs, keyValue{k, obj})
		}
		return nil
	}
	var err error
	switch {
	case sel.Index != "":
		var i int
		if i, err = s.indexLocked("select", sel.Index); err == nil {
			for k := range s.cur.indices[i][sel.Value] {
				if err = keep(k, s.cur.items[k].obj); err != nil {
					break
				}
			}
		}
	case sel.Namespace != "" && s.hasIndexLocked(cache.NamespaceIndex):
		i, _ := s.indexLocked("select", cache.NamespaceIndex)
		for k := range s.cur.indices[i][sel.Namespace] {
			if err = keep(k, s.cur.items[k].obj); err != nil {
				break
			}
		}
	default:
		for k, e := range s.cur.items {
			if err = keep(k, e.obj); err != nil {
				break
			}
		}
	}
	s.mu.RUnlock()
	if err != nil {
		return err
	}
	return callSorted(ctx, "select", kvs, fn)
}

// hasIndexLocked reports whether the store has an index of that name.
// s.mu must be held.
func (s *Store) hasIndexLocked(name string) bool {
	_, ok := s.indexPos[name]
	return ok
}
