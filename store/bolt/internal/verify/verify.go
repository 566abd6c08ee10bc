package verify

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sort"

	bbolt "go.etcd.io/bbolt"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/tools/cache"

	"github.com/warmcache/warmcache/store/bolt/internal/layout"
	"github.com/warmcache/warmcache/store/codec"
)

// Problem is one inconsistency found by Tx. Kind is one of the kinds below.
type Problem struct {
	Resource, Kind, Key, Index, Value, Detail string
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

// The kinds of Problem; package inspect documents each (ProblemKind).
const (
	Meta                = "meta"
	Layout              = "layout"
	Item                = "item"
	IndexWithoutItem    = "index-without-item"
	IndexWithoutReverse = "index-without-reverse"
	ReverseWithoutIndex = "reverse-without-index"
	BlobWithoutItem     = "blob-without-item"
	IndexValues         = "index-values"
	SelectPart          = "select-part"
	Count               = "count"
	NotDecoded          = "not-decoded"
	Checksum            = "checksum"
)

// Known is what the caller knows of a resource beyond the file: the codec
// and index functions of a store open on it.
type Known struct {
	Codec    codec.Codec
	Indexers cache.Indexers
}

// Options configures Tx.
type Options struct {
	// Known holds, by bucket name, the resources whose codec and index
	// functions are known. Index functions are checked only for those
	// whose every function is non-nil.
	Known map[string]Known
	// Codecs resolves a recorded codec name for the other resources; nil
	// leaves their payloads unchecked (a NotDecoded problem).
	Codecs func(name string) (codec.Codec, error)
	// Report receives each problem.
	Report func(Problem)
}

// Tx checks every resource of the file read by tx against invariant 4
// (see package inspect's Verify for the list of checks) and reports each
// inconsistency to opts.Report. It returns an error only when it cannot
// read (a page bbolt cannot read, ctx done).
func Tx(ctx context.Context, tx *bbolt.Tx, opts Options) error {
	return tx.ForEach(func(name []byte, res *bbolt.Bucket) error {
		if !layout.IsResourceBucket(name) {
			return nil
		}
		v := verifier{ctx: ctx, name: string(name), report: opts.Report}
		if k, ok := opts.Known[string(name)]; ok {
			v.codec, v.ix = k.Codec, indexesOf(k.Indexers)
		}
		return v.resource(res, opts.Codecs)
	})
}

// index is one index function.
type index struct {
	name string
	fn   cache.IndexFunc
}

// indexesOf returns ixs sorted by name, nil if a function is missing.
func indexesOf(ixs cache.Indexers) []index {
	out := make([]index, 0, len(ixs))
	for name, fn := range ixs {
		if fn == nil {
			return nil
		}
		out = append(out, index{name, fn})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

type verifier struct {
	ctx    context.Context
	name   string
	report func(Problem)
	codec  codec.Codec
	ix     []index // nil: index functions unknown
}

func (v *verifier) problem(kind string, key, index, value, format string, args ...any) {
	v.report(Problem{Resource: v.name, Kind: kind, Key: key, Index: index, Value: value, Detail: fmt.Sprintf(format, args...)})
}

func (v *verifier) resource(res *bbolt.Bucket, resolve func(string) (codec.Codec, error)) error {
	m, err := layout.DecodeMeta(res.Get(layout.MetaKey))
	if err != nil {
		v.problem(Meta, "", "", "", "%v", err)
		return nil
	}
	if layout.BucketName(m.Identity) != v.name {
		v.problem(Meta, "", "", "", "meta records identity %s", layout.BucketName(m.Identity))
	}
	if m.Schema != layout.SchemaVersion {
		// Another layout: nothing below would mean anything. Opening
		// the resource discards it (a newer one: the file is refused).
		v.problem(Meta, "", "", "", "schema version %d recorded, this binary reads %d; a writer discards the resource and relists", m.Schema, layout.SchemaVersion)
		return nil
	}
	g, err := layout.OpenLive(res)
	if err != nil {
		v.problem(Layout, "", "", "", "live generation: %v", err)
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
		v.problem(NotDecoded, "", "", "", "no codec %q available; payloads not checked", m.Codec)
	}
	if v.ix != nil && !slices.EqualFunc(v.ix, m.Indexes, func(x index, n string) bool { return x.name == n }) {
		v.ix = nil // the store's indexes differ from the recorded ones
	}
	indexes := map[string]*bbolt.Bucket{}
	for _, n := range m.Indexes {
		if b := g.Index.Bucket(layout.IndexBucketName(n)); b != nil {
			indexes[n] = b
		} else {
			v.problem(Layout, "", n, "", "index bucket missing")
		}
	}
	if err := g.Index.ForEachBucket(func(k []byte) error {
		if name := layout.IndexNameOf(k); !slices.Contains(m.Indexes, name) {
			v.problem(Layout, "", name, "", "index bucket not recorded in meta")
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
		v.problem(Count, "", "", "", "meta records %d objects, %d items stored", m.Objects, n)
	}
	if err := v.blobs(g, ids); err != nil {
		return err
	}
	if err := g.CheckSequence(); err != nil {
		v.problem(Layout, "", "", "", "%v", err)
	}
	return v.indexEntries(g, indexes)
}

// items checks every item, its reverse entry and its envelope; it returns
// the count and the sorted blob ids the items refer to.
func (v *verifier) items(g *layout.Generation, indexes map[string]*bbolt.Bucket) (int64, []uint64, error) {
	var n int64
	var ids []uint64
	owner := map[uint64]string{} // ids seen more than once, to name both items
	c := g.Items.Cursor()
	for k, val := c.First(); k != nil; k, val = c.Next() {
		n++
		if n%1024 == 0 {
			if err := v.ctx.Err(); err != nil {
				return n, nil, err
			}
		}
		key := string(k)
		body, err := layout.VerifyItemEntry(k, val)
		if err != nil {
			v.problem(Checksum, key, "", "", "item entry (envelope id, namespace, labels, index values): %s", layout.Detail(err))
			if len(val) >= layout.BlobIDLen+layout.SumLen {
				// The id is not trusted, but its envelope is not
				// reported again as referenced by no item.
				ids = append(ids, binary.BigEndian.Uint64(val))
			}
			continue
		}
		if len(body) < layout.BlobIDLen {
			v.problem(Item, key, "", "", "item entry of %d bytes, shorter than a blob id", len(body))
			continue
		}
		idb := body[:layout.BlobIDLen]
		ids = append(ids, binary.BigEndian.Uint64(idb))
		// An entry whose select part does not parse has no readable
		// reverse entry either; its envelope is checked all the same.
		entry, entryErr := layout.ParseItemBody(body)
		var rev map[string][]string
		if entryErr != nil {
			v.problem(SelectPart, key, "", "", "%v", entryErr)
		} else {
			rev = v.reverse(key, entry.Reverse, indexes)
		}
		envb, err := g.EnvelopeAt(k, idb)
		if errors.Is(err, layout.ErrChecksum) {
			v.problem(Checksum, key, "", "", "envelope (payload, resourceVersion, UID): %s", layout.Detail(err))
			continue
		}
		if err != nil {
			v.problem(Item, key, "", "", "%v", err)
			continue
		}
		env, err := layout.DecodeEnvelope(envb)
		if err != nil {
			v.problem(Item, key, "", "", "%v", err)
			continue
		}
		if v.codec == nil {
			continue
		}
		obj, err := codec.DecodeFor(v.codec, env.Payload, func() []byte { return layout.ItemAD(v.name, key, env.RV, env.UID) })
		if err != nil {
			v.problem(Item, key, "", "", "payload does not decode with codec %s: %v", v.codec.Name(), err)
			continue
		}
		if a, err := meta.Accessor(obj); err == nil && a.GetResourceVersion() != env.RV {
			v.problem(Item, key, "", "", "envelope resourceVersion %q, object %q", env.RV, a.GetResourceVersion())
		}
		if want := layout.AppendSelectPart(nil, key, obj); entryErr == nil && !bytes.Equal(entry.Select, want) {
			v.problem(SelectPart, key, "", "", "recorded namespace and labels %s, the object has %s", describeSelect(k, entry.Parsed), describeSelect(k, mustParseSelect(want)))
		}
		if v.ix == nil || entryErr != nil {
			continue
		}
		for _, x := range v.ix {
			want, err := layout.IndexValues(x.name, x.fn, key, obj)
			if err != nil {
				v.problem(IndexValues, key, x.name, "", "%v", err)
				continue
			}
			if got := rev[x.name]; !slices.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
				v.problem(IndexValues, key, x.name, "", "recorded values %q, index function gives %q", got, want)
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

// reverse decodes the reverse entry of the item stored under key and
// checks that its index entries exist.
func (v *verifier) reverse(key string, b []byte, indexes map[string]*bbolt.Bucket) map[string][]string {
	rev, err := layout.DecodeReverse(b)
	if err != nil {
		v.problem(ReverseWithoutIndex, key, "", "", "%v", err)
	}
	for name, values := range rev {
		b := indexes[name]
		if b == nil {
			v.problem(ReverseWithoutIndex, key, name, "", "reverse entry names an index that is not recorded")
			continue
		}
		for _, value := range values {
			if b.Get(layout.IndexKey(value, key)) == nil {
				v.problem(ReverseWithoutIndex, key, name, value, "index entry missing")
			}
		}
	}
	return rev
}

// sharedEnvelopes reports the items whose envelope id is in shared.
func (v *verifier) sharedEnvelopes(g *layout.Generation, shared map[uint64]string) {
	c := g.Items.Cursor()
	var i int
	for k, val := c.First(); k != nil; k, val = c.Next() {
		if i++; i%1024 == 0 && v.ctx.Err() != nil {
			return
		}
		idb, _, err := layout.SplitItemEntry(k, val)
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
			v.problem(Item, string(k), "", "", "envelope %d shared with item %q", id, first)
		}
	}
}

// blobs checks that every envelope belongs to an item; ids are the sorted,
// distinct blob ids of the items.
func (v *verifier) blobs(g *layout.Generation, ids []uint64) error {
	c := g.Blobs.Cursor()
	i, seen := 0, 0
	for k, _ := c.First(); k != nil; k, _ = c.Next() {
		if seen++; seen%1024 == 0 {
			if err := v.ctx.Err(); err != nil {
				return err
			}
		}
		if len(k) != layout.BlobIDLen {
			v.problem(BlobWithoutItem, "", "", "", "malformed blob id %x", k)
			continue
		}
		id := binary.BigEndian.Uint64(k)
		for i < len(ids) && ids[i] < id {
			i++
		}
		if i == len(ids) || ids[i] != id {
			v.problem(BlobWithoutItem, "", "", "", "envelope %d referenced by no item", id)
		}
	}
	return v.ctx.Err()
}

// indexEntries checks that every index entry has its item and its reverse
// entry.
func (v *verifier) indexEntries(g *layout.Generation, indexes map[string]*bbolt.Bucket) error {
	names := make([]string, 0, len(indexes))
	for n := range indexes {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, name := range names {
		c := indexes[name].Cursor()
		sums := layout.NewIndexSum(name)
		var i int
		for k, val := c.First(); k != nil; k, val = c.Next() {
			if i++; i%1024 == 0 {
				if err := v.ctx.Err(); err != nil {
					return err
				}
			}
			value, key, err := layout.SplitIndexKey(k, val)
			if serr := sums.Verify(k, val); serr != nil {
				v.problem(Checksum, key, name, value, "index entry: %s", layout.Detail(serr))
				continue
			}
			if err != nil {
				v.problem(IndexWithoutItem, "", name, "", "malformed index key %q: %v", k, err)
				continue
			}
			item := g.Items.Get([]byte(key))
			if item == nil {
				v.problem(IndexWithoutItem, key, name, value, "index entry without an item")
				continue
			}
			rev, err := layout.ItemReverse([]byte(key), item)
			if err != nil || !slices.Contains(rev[name], value) {
				v.problem(IndexWithoutReverse, key, name, value, "index entry not in the item's reverse entry")
			}
		}
	}
	return nil
}

// describeSelect describes a select part of the item stored under key.
func describeSelect(key []byte, p layout.SelectPart) string {
	if !p.HasMeta {
		return "no metadata"
	}
	return fmt.Sprintf("namespace %q labels %v", p.NamespaceOf(key), p.Labels.Map())
}

// mustParseSelect parses a select part AppendSelectPart wrote.
func mustParseSelect(b []byte) layout.SelectPart {
	p, _, err := layout.ParseSelectPart(b)
	if err != nil {
		panic(fmt.Sprintf("check: a select part just encoded does not parse: %v", err))
	}
	return p
}
