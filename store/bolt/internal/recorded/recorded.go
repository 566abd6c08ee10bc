// Package recorded checks what a warmcache file records for a resource
// against what the store opening it wants (invariant 3: the file describes
// itself), and brings the resource's bucket into a usable state: data
// recorded with another schema version, identity, codec, type fingerprint,
// cluster or transform version, or sealed with a key the codec does not
// hold, is discarded; an interrupted relist's staged generation, an
// interrupted fill's content and a replaced generation whose deletion did
// not happen are deleted; other index names or version ask for a rebuild.
package recorded

import (
	"encoding/binary"
	"fmt"
	"slices"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/warmcache/warmcache/store"
	"github.com/warmcache/warmcache/store/bolt/internal/fileerr"
	"github.com/warmcache/warmcache/store/bolt/internal/layout"
	"github.com/warmcache/warmcache/store/codec"
)

// Want is what a store wants to find recorded for its resource.
type Want struct {
	// Bucket is the resource's bucket name (layout.BucketName(Identity)).
	Bucket []byte
	// Identity, Codec's name, TypeHash (Fingerprint), Cluster and
	// TransformVersion must be those recorded, or the data is discarded.
	Identity                            layout.Identity
	Codec                               codec.Codec
	TypeHash, Cluster, TransformVersion string
	// Indexes (sorted) and IndexVersion must be those recorded, or the
	// index entries are rebuilt.
	Indexes      []string
	IndexVersion string
	// Corrupt counts a damaged record found, by part (layout.PartMeta,
	// layout.PartLive).
	Corrupt func(part string)
}

// Findings is what Repair and Read learned about the recorded data.
type Findings struct {
	// Meta is the resource's meta as recorded (or created) and repaired.
	Meta layout.Meta
	// Discarded says why the recorded data was discarded, "" if it was
	// not.
	Discarded string
	// RelistInterrupted: a relist had begun and not committed.
	RelistInterrupted bool
	// Fill: the interrupted relist was a fill, whose Filled objects were
	// deleted.
	Fill   bool
	Filled int64
	// Rebuild says why the index entries must be rebuilt, "" if not.
	Rebuild string
	// Resealed counts the objects sealed with an older key, which a
	// relist rewrites with the current one.
	Resealed int64
}

// mismatch returns why recorded meta cannot be used by w, or "".
func (w *Want) mismatch(m *layout.Meta) string {
	switch {
	case m.Schema != layout.SchemaVersion:
		return fmt.Sprintf("schema version %d recorded, this binary uses %d", m.Schema, layout.SchemaVersion)
	case m.Identity != w.Identity:
		return fmt.Sprintf("identity %s recorded, want %s", m.Identity, w.Bucket)
	case m.Codec != w.Codec.Name():
		return fmt.Sprintf("codec %q recorded, want %q", m.Codec, w.Codec.Name())
	case m.TypeHash != w.TypeHash:
		return fmt.Sprintf("type fingerprint %q recorded, this binary's type has %q (its API types changed: stored objects may lack fields)", m.TypeHash, w.TypeHash)
	case m.Cluster != w.Cluster:
		return fmt.Sprintf("cluster %q recorded, now connected to cluster %q (the cluster was recreated or the file comes from another one)", m.Cluster, w.Cluster)
	case m.TransformVersion != w.TransformVersion:
		return fmt.Sprintf("transform version %q recorded, want %q (the transform changed: stored objects were shaped by the old one)", m.TransformVersion, w.TransformVersion)
	}
	return ""
}

// indexMismatch returns why the recorded index entries cannot be used by
// w, or "".
func (w *Want) indexMismatch(m *layout.Meta) string {
	switch {
	case m.IndexBuild:
		return "an index rebuild was interrupted"
	case !slices.Equal(m.Indexes, w.Indexes):
		return fmt.Sprintf("index names %q recorded, want %q", m.Indexes, w.Indexes)
	case m.IndexVersion != w.IndexVersion:
		return fmt.Sprintf("index version %q recorded, want %q", m.IndexVersion, w.IndexVersion)
	}
	return ""
}

// checkLive returns an error if the live generation of res is missing a
// bucket or its envelope sequence is behind.
func checkLive(res *bbolt.Bucket) error {
	g, err := layout.OpenLive(res)
	if err != nil {
		return err
	}
	return g.CheckSequence()
}

// Repair brings the resource's bucket into a usable state for w in the
// write transaction tx: creates it, discards mismatching data, deletes
// staged and replaced generations.
func Repair(tx *bbolt.Tx, w Want) (Findings, error) {
	var f Findings
	res := tx.Bucket(w.Bucket)
	if res != nil {
		var reason string
		m, err := layout.DecodeMeta(res.Get(layout.MetaKey))
		if err != nil {
			reason = fmt.Sprintf("metadata unreadable: %v", err)
		} else if reason = w.mismatch(&m); reason == "" {
			if err = checkLive(res); err != nil {
				reason = fmt.Sprintf("live data unreadable: %v", err)
			}
		}
		if part := layout.PartOf(err); part != "" {
			w.Corrupt(part)
		}
		var sealed sealFindings
		if reason == "" {
			sealed = checkSealKeys(res, w.Codec)
			reason = sealed.unreadable
		}
		if reason == "" && sealed.stale > 0 && m.State == layout.StateComplete {
			// Rotation: a relist rewrites every object with the current key.
			m.State, m.Reason = layout.StateIncomplete, fmt.Sprintf("%d objects sealed with an older key; a relist rewrites them with the current one", sealed.stale)
			f.Resealed = sealed.stale
			if err := layout.PutMeta(res, &m); err != nil {
				return f, err
			}
		}
		if reason != "" {
			if err := tx.DeleteBucket(w.Bucket); err != nil {
				return f, err
			}
			res, f.Discarded = nil, reason
		} else {
			f.Meta = m
		}
	}
	if res == nil {
		return create(tx, w, f.Discarded)
	}
	m := &f.Meta
	if m.Staging != 0 {
		f.RelistInterrupted = true
		m.Staging = 0
	}
	live, _ := layout.LiveGen(res)
	if m.NextGen <= live {
		m.NextGen = live + 1
	}
	if m.State == layout.StateFilling {
		// A fill that did not commit wrote part of a list in place:
		// never serve it nor resume from it (invariant 2). An empty
		// generation replaces it; the loop below deletes the old one.
		f.RelistInterrupted, f.Fill, f.Filled = true, true, m.Objects
		live = m.NextGen
		m.NextGen++
		if _, err := layout.CreateGeneration(res, live, m.Indexes); err != nil {
			return f, err
		}
		if err := res.Put(layout.LiveKey, layout.LiveValue(live)); err != nil {
			return f, err
		}
		m.RV, m.State, m.Reason, m.Objects = "", layout.StateNew, "", 0
	}
	// Delete every generation but the live one: a staged one (interrupted
	// relist) or a replaced one whose deletion did not happen.
	gens := res.Bucket(layout.GenBucket)
	var stale [][]byte
	if err := gens.ForEachBucket(func(k []byte) error {
		if len(k) != 8 || binary.BigEndian.Uint64(k) != live {
			stale = append(stale, slices.Clone(k))
		}
		return nil
	}); err != nil {
		return f, err
	}
	for _, k := range stale {
		if err := gens.DeleteBucket(k); err != nil {
			return f, err
		}
	}
	f.Rebuild = w.indexMismatch(m)
	if f.RelistInterrupted || len(stale) > 0 {
		return f, layout.PutMeta(res, m)
	}
	return f, nil
}

// create writes a new, empty resource.
func create(tx *bbolt.Tx, w Want, discarded string) (Findings, error) {
	res, err := tx.CreateBucket(w.Bucket)
	if err != nil {
		return Findings{}, err
	}
	now := time.Now().UnixNano()
	m := layout.Meta{
		Schema: layout.SchemaVersion, Identity: w.Identity, Codec: w.Codec.Name(), TypeHash: w.TypeHash,
		Cluster: w.Cluster, TransformVersion: w.TransformVersion,
		Indexes: w.Indexes, IndexVersion: w.IndexVersion, State: layout.StateNew,
		NextGen: 2, Created: now,
	}
	if _, err := layout.CreateGeneration(res, 1, w.Indexes); err != nil {
		return Findings{}, err
	}
	if err := res.Put(layout.LiveKey, layout.LiveValue(1)); err != nil {
		return Findings{}, err
	}
	return Findings{Meta: m, Discarded: discarded}, layout.PutMeta(res, &m)
}

// Read is Repair for a read-only DB: it writes nothing and fails where
// Repair would discard or rebuild (an error wrapping ErrReadOnly), or
// create (ErrResourceNotFound and ErrReadOnly).
func Read(tx *bbolt.Tx, w Want) (Findings, error) {
	var f Findings
	res := tx.Bucket(w.Bucket)
	if res == nil {
		return f, fmt.Errorf("%w: %w (a read-only DB cannot create it)", fileerr.ErrResourceNotFound, fileerr.ErrReadOnly)
	}
	m, err := layout.DecodeMeta(res.Get(layout.MetaKey))
	if err != nil {
		return f, fmt.Errorf("%w: %w", store.ErrCorrupt, err)
	}
	reason := w.mismatch(&m)
	if reason == "" {
		reason = w.indexMismatch(&m)
	}
	if reason == "" {
		if err := checkLive(res); err != nil {
			reason = err.Error()
		}
	}
	if reason != "" {
		return f, fmt.Errorf("%w: recorded data cannot be used (%s) and would have to be discarded or rebuilt", fileerr.ErrReadOnly, reason)
	}
	f.Meta = m
	f.RelistInterrupted = m.Staging != 0 || m.State == layout.StateFilling
	return f, nil
}
