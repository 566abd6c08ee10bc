package inspect

import (
	"context"
	"fmt"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/warmcache/warmcache/store/bolt"
	"github.com/warmcache/warmcache/store/bolt/internal/layout"
)

// ResourceState is the recorded health of a resource's data.
type ResourceState string

const (
	// StateNew: no Replace was ever committed; the items (if any) are
	// incremental changes only.
	StateNew = ResourceState(layout.StateNew)
	// StateComplete: the items are a complete picture of the server at
	// the recorded resourceVersion.
	StateComplete = ResourceState(layout.StateComplete)
	// StateIncomplete: the items were complete once but something was
	// lost since (an item that does not decode); a relist is needed.
	StateIncomplete = ResourceState(layout.StateIncomplete)
	// StateFilling: a relist into the empty resource wrote its objects
	// in place and did not commit; the next read-write open deletes them.
	StateFilling = ResourceState(layout.StateFilling)
	// StateRelisting is reported by Resources (never recorded as such)
	// for a resource with a staged, uncommitted Replace.
	StateRelisting ResourceState = "relisting"
)

// ResourceInfo describes one resource recorded in a file, as read by
// Resources. It is a copy; nothing in it refers to the file.
type ResourceInfo struct {
	// Identity is the recorded identity (canonical).
	Identity bolt.Identity
	// Codec is the name of the codec of the payloads.
	Codec string
	// Schema is the resource's recorded schema version.
	Schema int
	// Indexes are the recorded index names, sorted; IndexVersion their
	// recorded version.
	Indexes      []string
	IndexVersion string
	// Cluster is the recorded cluster the data is a cache of
	// (bolt.ResourceOptions.Cluster), TransformVersion the recorded version
	// of the transform that shaped the stored objects
	// (bolt.ResourceOptions.TransformVersion); "" when none was recorded
	// (or the file predates schema 5).
	Cluster, TransformVersion string
	// ResourceVersion is the recorded RV.
	ResourceVersion string
	// State is StateNew, StateComplete, StateIncomplete or StateFilling,
	// or StateRelisting while a Replace is staged.
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

// Resources lists the resources recorded in db's file, in bucket-name
// order, from one read transaction. It reads every page of the file (to
// measure Bytes), which takes time proportional to the file's size.
func Resources(ctx context.Context, db *bolt.DB) ([]ResourceInfo, error) {
	var out []ResourceInfo
	err := file(db).View("resources", func(tx *bbolt.Tx) error {
		return tx.ForEach(func(name []byte, res *bbolt.Bucket) error {
			if err := ctx.Err(); err != nil {
				return err
			}
			if !layout.IsResourceBucket(name) {
				return nil
			}
			st := res.Stats()
			info := ResourceInfo{Bytes: int64(st.BranchAlloc + st.LeafAlloc)}
			m, err := layout.DecodeMeta(res.Get(layout.MetaKey))
			if err != nil {
				info.Problem = fmt.Sprintf("bucket %q: %v", name, err)
				out = append(out, info)
				return nil
			}
			info.Identity, info.Codec, info.Schema = bolt.Identity(m.Identity), m.Codec, m.Schema
			info.Indexes, info.IndexVersion = m.Indexes, m.IndexVersion
			info.Cluster, info.TransformVersion = m.Cluster, m.TransformVersion
			info.ResourceVersion, info.State, info.Reason, info.Objects = m.RV, ResourceState(m.State), m.Reason, m.Objects
			if m.Staging != 0 {
				info.State = StateRelisting
			}
			info.Created, info.LastWrite, info.LastRelist = unixTime(m.Created), unixTime(m.Updated), unixTime(m.Relisted)
			out = append(out, info)
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("inspect: resources of %s: %w", db.Path(), err)
	}
	return out, nil
}

func unixTime(ns int64) time.Time {
	if ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, ns).UTC()
}
