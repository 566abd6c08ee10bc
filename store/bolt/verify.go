package bolt

import (
	"context"
	"encoding/binary"
	"fmt"
	"slices"

	bbolt "go.etcd.io/bbolt"
	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/warmcache/warmcache/store/codec"
)

// ProblemKind classifies a Problem found by Verify.
type ProblemKind string

// The kinds of Problem.
const (
	// ProblemMeta: the resource's metadata is unreadable, names another
	// identity than its bucket, or records another schema version (the
	// rest of the resource is then not checked).
	ProblemMeta ProblemKind = "meta"
	// ProblemLayout: a bucket of the layout is missing or unexpected, or
	// the envelope sequence is behind the envelope ids in use.
	ProblemLayout ProblemKind = "layout"
	// ProblemItem: an item's entry is malformed, its envelope is missing
	// or shared with another item, its envelope or payload does not
	// decode, or the payload's resourceVersion differs from the envelope's.
	ProblemItem ProblemKind = "item"
	// ProblemIndexWithoutItem: an index entry names a key with no item.
	ProblemIndexWithoutItem ProblemKind = "index-without-item"
	// ProblemIndexWithoutReverse: an index entry is not in its item's
	// reverse entry (the index values recorded in the item entry).
	ProblemIndexWithoutReverse ProblemKind = "index-without-reverse"
	// ProblemReverseWithoutIndex: an item's reverse entry does not decode,
	// names an index entry that does not exist, or an index that is not
	// recorded.
	ProblemReverseWithoutIndex ProblemKind = "reverse-without-index"
	// ProblemBlobWithoutItem: an envelope is referenced by no item.
	ProblemBlobWithoutItem ProblemKind = "blob-without-item"
	// ProblemReverseWithoutItem was reported for a reverse entry without
	// an item.
	//
	// Deprecated: since schema version 2 reverse entries are part of the
	// item entries and this problem cannot occur; it is never reported.
	ProblemReverseWithoutItem ProblemKind = "reverse-without-item"
	// ProblemIndexValues: an index function applied to the decoded item
	// yields other values than those recorded (only checked for resources
	// open with Resource on the DB, whose functions are known).
	ProblemIndexValues ProblemKind = "index-values"
	// ProblemCount: the recorded number of objects differs from the
	// number of items.
	ProblemCount ProblemKind = "count"
	// ProblemNotDecoded: no codec is known for the resource (see
	// Options.Codecs), so its payloads were not checked.
	ProblemNotDecoded ProblemKind = "not-decoded"
)

// Problem is one inconsistency found by Verify.
type Problem struct {
	// Resource is the bucket name of the resource (Identity.String()).
	Resource string
	Kind     ProblemKind
	// Key is the object key concerned, Index and Value the index entry,
	// where they apply.
	Key, Index, Value string
	// Detail says what is wrong.
	Detail string
}

func (p Problem) String() string {
	s := fmt.Sprintf("%s: %s", p.Resource, p.Kind)
	if p.Key != "" {
		s += fmt.Sprintf(" key %q", p.Key)
	}
	if p.Index != "" {
		s += fmt.Sprintf(" index %q value %q", p.Index, p.Value)
	}
	return s + ": " + p.Detail
}

// Verify checks every resource of the file against invariant 4 and reports
// each inconsistency to report: every index entry has its item and agrees
// with the item's reverse entry; every reverse entry has its index
// entries; every item has an envelope of its own and every envelope an
// item; every item decodes and its envelope's resourceVersion is
// the decoded object's; for resources open on db, the index functions give
// the recorded values; the recorded object count is the number of items.
// The live generation is checked; a staged Replace is not.
//
// It reads one consistent snapshot (one read transaction) and every item,
// so it takes time proportional to the file. It returns an error only when
// it cannot read (closed DB, a page bbolt cannot read, ctx done).
func (db *DB) Verify(ctx context.Context, report func(Problem)) error {
	db.mu.Lock()
	open := make(map[string]*Store, len(db.stores))
	for name, s := range db.stores {
		open[name] = s
	}
	db.mu.Unlock()
	err := db.view("verify", func(tx *bbolt.Tx) error {
		return tx.ForEach(func(name []byte, res *bbolt.Bucket) error {
			if !isResourceBucket(name) {
				return nil
			}
			v := verifier{ctx: ctx, name: string(name), report: report}
			if s := open[string(name)]; s != nil {
				v.codec, v.ix = s.codec, s.indexers.Load()
			}
			return v.resource(res, db.opts.Codecs)
		})
	})
	if err != nil {
		return fmt.Errorf("bolt: verify %s: %w", db.path, err)
	}
	return nil
}

type verifier struct {
	ctx    context.Context
	name   string
	report func(Problem)
	codec  codec.Codec
	ix     *indexSet // nil: index functions unknown
}

func (v *verifier) problem(kind ProblemKind, key, index, value, format string, args ...any) {
	v.report(Problem{Resource: v.name, Kind: kind, Key: key, Index: index, Value: value, Detail: fmt.Sprintf(format, args...)})
}

func (v *verifier) resource(res *bbolt.Bucket, resolve CodecResolver) error {
	m, err := decodeMeta(res.Get(metaKey))
	if err != nil {
		v.problem(ProblemMeta, "", "", "", "%v", err)
		return nil
	}
	if m.Identity.String() != v.name {
		v.problem(ProblemMeta, "", "", "", "meta records identity %s", m.Identity)
	}
	if m.Schema != schemaVersion {
		// Another layout: nothing below would mean anything. Opening
		// the resource discards it (a newer one: the file is refused).
		v.problem(ProblemMeta, "", "", "", "schema version %d recorded, this binary reads %d; a writer discards the resource and relists", m.Schema, schemaVersion)
		return nil
	}
	g, err := openLive(res)
	if err != nil {
		v.problem(ProblemLayout, "", "", "", "live generation: %v", err)
		return nil
	}
	if v.codec == nil && resolve != nil {
		if c, err := resolve(m.Codec); err == nil {
			v.codec = c
		}
	}
	if v.codec != nil && v.codec.Name() != m.Codec {
		v.codec = nil
	}
	if v.codec == nil {
		v.problem(ProblemNotDecoded, "", "", "", "no codec %q available; payloads not checked", m.Codec)
	}
	if v.ix != nil && !slices.Equal(v.ix.names(), m.Indexes) {
		v.ix = nil // the store's indexes differ from the recorded ones
	}
	indexes := map[string]*bbolt.Bucket{}
	for _, n := range m.Indexes {
		if b := g.index.Bucket([]byte(n)); b != nil {
			indexes[n] = b
		} else {
			v.problem(ProblemLayout, "", n, "", "index bucket missing")
		}
	}
	if err := g.index.ForEachBucket(func(k []byte) error {
		if !slices.Contains(m.Indexes, string(k)) {
			v.problem(ProblemLayout, "", string(k), "", "index bucket not recorded in meta")
		}
		return nil
	}); err != nil {
		return err
	}
	n, ids, err := v.items(g, indexes)
	if err != nil {
		return err
	}
	if n != m.Objects {
		v.problem(ProblemCount, "", "", "", "meta records %d objects, %d items stored", m.Objects, n)
	}
	if err := v.blobs(g, ids); err != nil {
		return err
	}
	if err := g.checkSequence(); err != nil {
		v.problem(ProblemLayout, "", "", "", "%v", err)
	}
	return v.indexEntries(g, indexes)
}

// items checks every item, its reverse entry and its envelope; it returns
// the count and the sorted blob ids the items refer to.
func (v *verifier) items(g *generation, indexes map[string]*bbolt.Bucket) (int64, []uint64, error) {
	var n int64
	var ids []uint64
	owner := map[uint64]string{} // ids seen more than once, to name both items
	c := g.items.Cursor()
	for k, val := c.First(); k != nil; k, val = c.Next() {
		n++
		if n%1024 == 0 {
			if err := v.ctx.Err(); err != nil {
				return n, nil, err
			}
		}
		key := string(k)
		idb, revb, err := splitItemEntry(val)
		if err != nil {
			v.problem(ProblemItem, key, "", "", "%v", err)
			continue
		}
		ids = append(ids, binary.BigEndian.Uint64(idb))
		rev, err := decodeReverse(revb)
		if err != nil {
			v.problem(ProblemReverseWithoutIndex, key, "", "", "%v", err)
		}
		for name, values := range rev {
			b := indexes[name]
			if b == nil {
				v.problem(ProblemReverseWithoutIndex, key, name, "", "reverse entry names an index that is not recorded")
				continue
			}
			for _, value := range values {
				if b.Get(indexKey(value, key)) == nil {
					v.problem(ProblemReverseWithoutIndex, key, name, value, "index entry missing")
				}
			}
		}
		envb, err := g.envelopeOf(k, val)
		if err != nil {
			v.problem(ProblemItem, key, "", "", "%v", err)
			continue
		}
		env, err := decodeEnvelope(envb)
		if err != nil {
			v.problem(ProblemItem, key, "", "", "%v", err)
			continue
		}
		if v.codec == nil {
			continue
		}
		obj, err := v.codec.Decode(env.payload)
		if err != nil {
			v.problem(ProblemItem, key, "", "", "payload does not decode with codec %s: %v", v.codec.Name(), err)
			continue
		}
		if a, err := meta.Accessor(obj); err == nil && a.GetResourceVersion() != env.rv {
			v.problem(ProblemItem, key, "", "", "envelope resourceVersion %q, object %q", env.rv, a.GetResourceVersion())
		}
		if v.ix == nil {
			continue
		}
		for _, x := range v.ix.list {
			want, err := indexValuesOf(x, key, obj)
			if err != nil {
				v.problem(ProblemIndexValues, key, x.name, "", "%v", err)
				continue
			}
			if got := rev[x.name]; !slices.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
				v.problem(ProblemIndexValues, key, x.name, "", "recorded values %q, index function gives %q", got, want)
			}
		}
	}
	slices.Sort(ids)
	for i := 1; i < len(ids); i++ {
		if ids[i] == ids[i-1] {
			owner[ids[i]] = ""
		}
	}
	if len(owner) > 0 {
		v.sharedEnvelopes(g, owner)
	}
	return n, slices.Compact(ids), nil
}

// sharedEnvelopes reports the items whose envelope id is in shared.
func (v *verifier) sharedEnvelopes(g *generation, shared map[uint64]string) {
	c := g.items.Cursor()
	var i int
	for k, val := c.First(); k != nil; k, val = c.Next() {
		if i++; i%1024 == 0 && v.ctx.Err() != nil {
			return
		}
		idb, _, err := splitItemEntry(val)
		if err != nil {
			continue
		}
		id := binary.BigEndian.Uint64(idb)
		first, ok := shared[id]
		switch {
		case !ok:
		case first == "":
			shared[id] = string(k)
		default:
			v.problem(ProblemItem, string(k), "", "", "envelope %d shared with item %q", id, first)
		}
	}
}

// blobs checks that every envelope belongs to an item; ids are the sorted,
// distinct blob ids of the items.
func (v *verifier) blobs(g *generation, ids []uint64) error {
	c := g.blobs.Cursor()
	i, seen := 0, 0
	for k, _ := c.First(); k != nil; k, _ = c.Next() {
		if seen++; seen%1024 == 0 {
			if err := v.ctx.Err(); err != nil {
				return err
			}
		}
		if len(k) != blobIDLen {
			v.problem(ProblemBlobWithoutItem, "", "", "", "malformed blob id %x", k)
			continue
		}
		id := binary.BigEndian.Uint64(k)
		for i < len(ids) && ids[i] < id {
			i++
		}
		if i == len(ids) || ids[i] != id {
			v.problem(ProblemBlobWithoutItem, "", "", "", "envelope %d referenced by no item", id)
		}
	}
	return v.ctx.Err()
}

// indexEntries checks that every index entry has its item and its reverse
// entry.
func (v *verifier) indexEntries(g *generation, indexes map[string]*bbolt.Bucket) error {
	names := make([]string, 0, len(indexes))
	for n := range indexes {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, name := range names {
		c := indexes[name].Cursor()
		var i int
		for k, _ := c.First(); k != nil; k, _ = c.Next() {
			if i++; i%1024 == 0 {
				if err := v.ctx.Err(); err != nil {
					return err
				}
			}
			value, key, err := splitIndexKey(k)
			if err != nil {
				v.problem(ProblemIndexWithoutItem, "", name, "", "malformed index key %q: %v", k, err)
				continue
			}
			if g.items.Get([]byte(key)) == nil {
				v.problem(ProblemIndexWithoutItem, key, name, value, "index entry without an item")
				continue
			}
			rev, err := itemReverse(g.items.Get([]byte(key)))
			if err != nil || !slices.Contains(rev[name], value) {
				v.problem(ProblemIndexWithoutReverse, key, name, value, "index entry not in the item's reverse entry")
			}
		}
	}
	return nil
}
