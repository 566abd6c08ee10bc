// Package match decides a store.Selection's namespace and label parts from
// an item entry of the bolt store (layout.ItemEntry), which records each
// object's namespace and labels, without decoding the object; and chooses
// the entries a selection reads its candidates from (SourceOf).
package match

import (
	"bytes"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"

	"github.com/warmcache/warmcache/store"
	"github.com/warmcache/warmcache/store/bolt/internal/layout"
)

// ErrNoMetadata is returned by Match for an object without metadata when
// the selection asks for a namespace or labels, as store.Selection.Matches
// fails for one.
var ErrNoMetadata = errors.New("object has no metadata to select by namespace or labels")

// Matcher decides a store.Selection's namespace and label parts from an
// item entry.
type Matcher struct {
	namespace []byte // nil: any
	all       bool   // the label part selects every object
	// reqs are the label selector's requirements, evaluated on the
	// entry's bytes; nil with a selector that does not list them
	// (labels.Nothing, other implementations), which is asked itself.
	reqs []labelReq
	sel  labels.Selector
	// ls is the entry being matched, reused so that passing it to sel
	// (a labels.Labels) does not allocate per entry.
	ls layout.Labels
}

// labelReq is one label requirement.
type labelReq struct {
	r      labels.Requirement
	key    string
	op     selection.Operator
	values []string
}

// New returns the Matcher of sel.
func New(sel store.Selection) *Matcher {
	m := &Matcher{sel: sel.Labels, all: sel.Labels == nil || sel.Labels.Empty()}
	if sel.Namespace != "" {
		m.namespace = []byte(sel.Namespace)
	}
	if m.all {
		return m
	}
	reqs, selectable := sel.Labels.Requirements()
	if !selectable {
		return m
	}
	m.reqs = make([]labelReq, 0, len(reqs))
	for _, r := range reqs {
		m.reqs = append(m.reqs, labelReq{r: r, key: r.Key(), op: r.Operator(), values: r.ValuesUnsorted()})
	}
	return m
}

// everything reports whether the matcher selects every object.
func (m *Matcher) everything() bool { return m.namespace == nil && m.all }

// Match reports whether the object stored under key with item entry v is
// selected, and returns the blob id of its envelope (aliasing v), for the
// caller to read it without verifying the entry again. A select part that
// does not parse is an error wrapping store.ErrCorrupt; an object without
// metadata fails a selection with a namespace or labels (ErrNoMetadata).
// A Matcher is used by one goroutine at a time.
func (m *Matcher) Match(key, v []byte) (id []byte, ok bool, err error) {
	e, err := layout.ParseItemEntry(key, v)
	if err != nil {
		return nil, false, fmt.Errorf("%w: item %q: %w", store.ErrCorrupt, key, err)
	}
	p := &e.Parsed
	if m.everything() {
		return e.ID, true, nil
	}
	if !p.HasMeta {
		return nil, false, fmt.Errorf("key %q: %w", key, ErrNoMetadata)
	}
	if m.namespace != nil && !bytes.Equal(p.NamespaceOf(key), m.namespace) {
		return nil, false, nil
	}
	if m.all {
		return e.ID, true, nil
	}
	m.ls = p.Labels
	if m.reqs == nil {
		return e.ID, m.sel.Matches(&m.ls), nil
	}
	for i := range m.reqs {
		if !m.reqs[i].matches(&m.ls) {
			return nil, false, nil
		}
	}
	return e.ID, true, nil
}

// matches is labels.Requirement.Matches on the entry's bytes for the
// operators label selectors are made of; the others (numeric comparisons)
// are left to the requirement.
func (r *labelReq) matches(ls *layout.Labels) bool {
	switch r.op {
	case selection.In, selection.Equals, selection.DoubleEquals:
		v, ok := ls.LookupRaw(r.key)
		return ok && r.hasValue(v)
	case selection.NotIn, selection.NotEquals:
		v, ok := ls.LookupRaw(r.key)
		return !ok || !r.hasValue(v)
	case selection.Exists:
		return ls.Has(r.key)
	case selection.DoesNotExist:
		return !ls.Has(r.key)
	}
	return r.r.Matches(ls)
}

func (r *labelReq) hasValue(v []byte) bool {
	for _, x := range r.values {
		if string(v) == x {
			return true
		}
	}
	return false
}
