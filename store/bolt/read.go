package bolt

import (
	"errors"
	"fmt"

	bbolt "go.etcd.io/bbolt"
	"k8s.io/client-go/tools/cache"

	"github.com/warmcache/warmcache/store"
	"github.com/warmcache/warmcache/store/bolt/internal/hot"
	"github.com/warmcache/warmcache/store/bolt/internal/layout"
)

// readLive runs fn on the live generation in a read transaction.
func (s *Store) readLive(op string, fn func(g *layout.Generation) error) error {
	if s.closed.Load() {
		return s.errClosed(op)
	}
	err := s.db.view(op, func(tx *bbolt.Tx) error {
		_, g, err := s.openLive(tx)
		if err != nil {
			return err
		}
		return fn(g)
	})
	if err != nil {
		return s.errorf(op, err)
	}
	return nil
}

// resourceBucket returns s's resource bucket in tx, or an error wrapping
// ErrCorrupt when the file has none.
func (s *Store) resourceBucket(tx *bbolt.Tx) (*bbolt.Bucket, error) {
	res := tx.Bucket(s.bname)
	if res == nil {
		return nil, fmt.Errorf("%w: resource bucket missing", ErrCorrupt)
	}
	return res, nil
}

// openLive returns s's resource bucket in tx and its live generation, or
// an error wrapping ErrCorrupt when either is missing or damaged.
func (s *Store) openLive(tx *bbolt.Tx) (*bbolt.Bucket, *layout.Generation, error) {
	res, err := s.resourceBucket(tx)
	if err != nil {
		return nil, nil, err
	}
	g, err := layout.OpenLive(res)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	return res, g, nil
}

// sizeHint is the recorded number of objects, a capacity hint.
func (s *Store) sizeHint() int {
	return int(min(max(s.status.Load().meta.Objects, 0), 1<<20))
}

// key calls the key function through store.KeyOf: its error or panic is
// a cache.KeyError, so bad input never crashes the process.
func (s *Store) key(obj interface{}) (string, error) { return store.KeyOf(s.keyFunc, obj) }

// KeyFunc returns the store's key function.
func (s *Store) KeyFunc() cache.KeyFunc { return s.keyFunc }

// Get returns the object stored under obj's key.
func (s *Store) Get(obj interface{}) (item interface{}, exists bool, err error) {
	key, err := s.key(obj)
	if err != nil {
		return nil, false, s.errorf("get", err)
	}
	return s.GetByKey(key)
}

// GetByKey returns the object stored under key. One that does not decode
// is an error wrapping ErrCorrupt, and marks the resource incomplete.
func (s *Store) GetByKey(key string) (item interface{}, exists bool, err error) {
	// st is what the read saw of the hot tier before its transaction
	// (zero, the most cautious stamp, after Close, which readLive
	// refuses).
	var st hot.Stamp
	if s.hot != nil && !s.closed.Load() {
		var obj interface{}
		var ok bool
		if obj, ok, st = s.hot.Fast(key); ok {
			return obj, true, nil
		}
	}
	var bad error
	err = s.readLive("get", func(g *layout.Generation) error {
		k := []byte(key)
		v := g.Items.Get(k)
		if v == nil {
			return nil
		}
		env, err := g.EnvelopeOf(k, v)
		if err != nil {
			bad = err
			return nil
		}
		item, bad = s.readPoint(k, env, st)
		exists = bad == nil
		return nil
	})
	if err != nil {
		return nil, false, err
	}
	if bad != nil {
		s.corrupted("get", []keyError{{key, bad}})
		return nil, false, s.errorf("get", bad)
	}
	return item, exists, nil
}

// List returns every stored object in key order, from one snapshot,
// decoding every object the hot tier does not hold (see package doc's
// Reads), or from the hot tier alone when it holds them all. Objects that
// do not decode are skipped, logged, and the resource marked incomplete.
// It returns nil after Close.
func (s *Store) List() []interface{} {
	if s.closed.Load() {
		return nil
	}
	if out, ok := s.listHot(); ok {
		return out
	}
	var out []interface{}
	var bad []keyError
	st := s.stamp()
	n := 0
	err := s.readLive("list", func(g *layout.Generation) error {
		b := newBulkDecoder(s, s.sizeHint())
		b.fill, b.st = true, st
		defer b.stop()
		c := g.Items.Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			b.addEntry(g, k, v)
			n++
		}
		b.flush()
		out, bad = b.out, b.bad
		return nil
	})
	s.readFailed("list", err)
	s.corrupted("list", bad)
	if err == nil && len(bad) == 0 {
		s.hot.Complete(st, n)
	}
	return out
}

// listHot returns every stored object in key order from the hot tier, if
// its part holds every one (hot.Part.Whole).
func (s *Store) listHot() ([]interface{}, bool) {
	var out []interface{}
	ok := s.hot.Whole("", func(_ string, obj interface{}) {
		if out == nil {
			out = make([]interface{}, 0, s.sizeHint())
		}
		out = append(out, obj)
	})
	if ok && out == nil {
		out = []interface{}{}
	}
	return out, ok
}

// readFailed logs a read error of a method without an error result.
func (s *Store) readFailed(op string, err error) {
	if err != nil && !errors.Is(err, ErrClosed) {
		s.logger.Error(err, "Read failed", "op", op)
	}
}

// ListKeys returns every stored key in order (nil after Close).
func (s *Store) ListKeys() []string {
	var out []string
	err := s.readLive("list keys", func(g *layout.Generation) error {
		out = make([]string, 0, s.sizeHint())
		c := g.Items.Cursor()
		for k, _ := c.First(); k != nil; k, _ = c.Next() {
			out = append(out, string(k))
		}
		return nil
	})
	s.readFailed("list keys", err)
	return out
}

// ResourceVersionOf returns the resourceVersion of the object stored under
// key without decoding it.
func (s *Store) ResourceVersionOf(key string) (rv string, exists bool, err error) {
	const op = "resource version of"
	var bad error
	err = s.readLive(op, func(g *layout.Generation) error {
		var env []byte
		env, rv, bad = lookupRV(g, []byte(key))
		exists = env != nil
		return nil
	})
	if err != nil {
		return "", false, err
	}
	if bad != nil {
		s.corrupted(op, []keyError{{key, bad}})
		return "", false, s.errorf(op, bad)
	}
	return rv, exists, nil
}

// lookupRV returns the envelope stored under key in g, nil if there is no
// such item, and its resourceVersion. An envelope that does not verify or
// whose resourceVersion does not parse is an error wrapping ErrCorrupt.
func lookupRV(g *layout.Generation, key []byte) (env []byte, rv string, err error) {
	env, err = g.Lookup(key)
	if err != nil || env == nil {
		return nil, "", err
	}
	if rv, err = layout.EnvelopeRV(env); err != nil {
		return nil, "", fmt.Errorf("%w: item %q: %w", ErrCorrupt, key, err)
	}
	return env, rv, nil
}
