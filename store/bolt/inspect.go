package bolt

import (
	"context"
	"fmt"
	"time"

	"github.com/warmcache/warmcache/store"

	bbolt "go.etcd.io/bbolt"

	"github.com/warmcache/warmcache/store/codec"
)

// ResourceInfo describes one resource recorded in a file, as read by
// Resources. It is a copy; nothing in it refers to the file.
type ResourceInfo struct {
	// Identity is the recorded identity (canonical).
	Identity Identity
	// Codec is the name of the codec of the payloads.
	Codec string
	// Schema is the resource's recorded schema version.
	Schema int
	// Indexes are the recorded index names, sorted; IndexVersion their
	// recorded version.
	Indexes      []string
	IndexVersion string
	// ResourceVersion is the recorded RV.
	ResourceVersion string
	// State is StateNew, StateComplete or StateIncomplete, or
	// StateRelisting while a Replace is staged.
	State ResourceState
	// Reason says why the state is incomplete, if it is.
	Reason string
	// Objects is the recorded number of objects.
	Objects int64
	// Bytes is the size of the pages the resource's data occupies.
	Bytes int64
	// Created, LastWrite and LastRelist are the times the resource was
	// created, last written and last relisted (zero if never).
	Created, LastWrite, LastRelist time.Time
	// Problem is set when the resource's metadata cannot be read; the
	// other fields are then zero except Bytes.
	Problem string
}

// Resources lists the resources recorded in the file, in bucket-name order,
// from one read transaction. It reads every page of the file (to measure
// Bytes), which takes time proportional to the file's size.
func (db *DB) Resources(ctx context.Context) ([]ResourceInfo, error) {
	var out []ResourceInfo
	err := db.view("resources", func(tx *bbolt.Tx) error {
		return tx.ForEach(func(name []byte, res *bbolt.Bucket) error {
			if err := ctx.Err(); err != nil {
				return err
			}
			if !isResourceBucket(name) {
				return nil
			}
			st := res.Stats()
			info := ResourceInfo{Bytes: int64(st.BranchAlloc + st.LeafAlloc)}
			m, err := decodeMeta(res.Get(metaKey))
			if err != nil {
				info.Problem = fmt.Sprintf("bucket %q: %v", name, err)
				out = append(out, info)
				return nil
			}
			info.Identity, info.Codec, info.Schema = m.Identity, m.Codec, m.Schema
			info.Indexes, info.IndexVersion = m.Indexes, m.IndexVersion
			info.ResourceVersion, info.State, info.Reason, info.Objects = m.RV, m.State, m.Reason, m.Objects
			if m.Staging != 0 {
				info.State = StateRelisting
			}
			info.Created, info.LastWrite, info.LastRelist = unixTime(m.Created), unixTime(m.Updated), unixTime(m.Relisted)
			out = append(out, info)
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("bolt: resources of %s: %w", db.path, err)
	}
	return out, nil
}

func unixTime(ns int64) time.Time {
	if ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, ns).UTC()
}

// OpenRecorded opens the recorded resource id for reading, without knowing
// its Go types or index functions: the codec is c, or when c is nil the one
// Options.Codecs resolves from the recorded codec name; the indexes are the
// recorded ones, so ByIndex, IndexKeys, ScanIndex and ListIndexFuncValues
// work while Index returns ErrNoIndexFunc. The store is read-only (writes
// return ErrReadOnly) and reads the content as recorded, including a
// staged Replace's absence. It is meant for inspection tools.
//
// A missing identity returns ErrResourceNotFound; a codec whose name
// differs from the recorded one ErrInvalidOptions.
func (db *DB) OpenRecorded(ctx context.Context, id Identity, c codec.Codec) (*Store, error) {
	id, err := id.canonical()
	if err != nil {
		return nil, fmt.Errorf("bolt: open recorded: %w", err)
	}
	name := id.String()
	var m resourceMeta
	err = db.view("open recorded", func(tx *bbolt.Tx) error {
		res := tx.Bucket([]byte(name))
		if res == nil {
			return ErrResourceNotFound
		}
		var err error
		if m, err = decodeMeta(res.Get(metaKey)); err != nil {
			return fmt.Errorf("%w: %w", ErrCorrupt, err)
		}
		if _, err := openLive(res); err != nil {
			return fmt.Errorf("%w: %w", ErrCorrupt, err)
		}
		return nil
	})
	if err == nil && m.Identity != id {
		err = fmt.Errorf("%w: bucket records identity %s", ErrCorrupt, m.Identity)
	}
	if err != nil {
		return nil, fmt.Errorf("bolt: open recorded %s: %w", name, err)
	}
	if c == nil {
		if db.opts.Codecs == nil {
			return nil, fmt.Errorf("bolt: open recorded %s: %w: no codec given and no Options.Codecs", name, ErrInvalidOptions)
		}
		if c, err = db.opts.Codecs(m.Codec); err != nil {
			return nil, fmt.Errorf("bolt: open recorded %s: codec %q: %w", name, m.Codec, err)
		}
	}
	if c.Name() != m.Codec {
		return nil, fmt.Errorf("bolt: open recorded %s: %w: codec %q given, %q recorded", name, ErrInvalidOptions, c.Name(), m.Codec)
	}
	list := make([]indexer, len(m.Indexes))
	for i, n := range m.Indexes {
		list[i] = indexer{name: n}
	}
	s := &Store{db: db, id: id, name: name, bname: []byte(name), codec: c, readOnly: true, objects: newObjectCache(defaultDecodedObjects)}
	s.keyFunc = store.DefaultKeyFunc
	s.logger = db.logger.WithValues("resource", name)
	s.indexers.Store(newIndexSet(list))
	s.meta = m
	s.status.Store(&status{meta: m.clone(), relistInterrupted: m.Staging != 0})
	if err := db.register(s); err != nil {
		return nil, err
	}
	return s, nil
}
