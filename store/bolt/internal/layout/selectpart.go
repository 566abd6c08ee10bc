package layout

import (
	"bytes"
	"errors"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
)

// The select part of an item entry holds what a store.Selection asks of
// an object, so that a selection reads item entries only and decodes the
// objects it selects, never the others:
//
//	namespace  0xc0 (msgpack nil): the namespace is derived from the key
//	           (KeyNamespace), true of every object under the default key
//	           function; a msgpack str: the namespace, when it is not the
//	           derived one; 0xc2 (msgpack false): the object has no
//	           metadata, and neither namespace nor labels follow
//	labels     a msgpack map of str to str, sorted by key (0x80 without
//	           labels)
//
// The encoding is deterministic: equal objects have equal select parts,
// which lets a write compare bytes to leave an unchanged item entry alone
// and lets the content check compare an entry with its decoded object.

const (
	selNamespaceFromKey = 0xc0
	selNoMeta           = 0xc2
)

// KeyNamespace is the namespace a key names under the default key
// function ("namespace/name", "name" for cluster-scoped objects): the
// part before the first '/', "" without one. It aliases key.
func KeyNamespace(key []byte) []byte {
	if i := bytes.IndexByte(key, '/'); i >= 0 {
		return key[:i]
	}
	return key[:0]
}

// AppendSelectPart appends the select part of obj, stored under key.
func AppendSelectPart(dst []byte, key string, obj interface{}) []byte {
	m, err := meta.Accessor(obj)
	if err != nil {
		return append(dst, selNoMeta)
	}
	ns := m.GetNamespace()
	if ns == string(KeyNamespace([]byte(key))) {
		dst = append(dst, selNamespaceFromKey)
	} else {
		dst = AppendStr(dst, ns)
	}
	ls := m.GetLabels()
	dst = appendLen(dst, len(ls), 0x80, 0xde, 0xdf)
	switch len(ls) {
	case 0:
		return dst
	case 1:
		for k, v := range ls {
			return AppendStr(AppendStr(dst, k), v)
		}
	}
	names := make([]string, 0, len(ls))
	for k := range ls {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, k := range names {
		dst = AppendStr(AppendStr(dst, k), ls[k])
	}
	return dst
}

// SelectPart is a parsed select part. It aliases the entry it was parsed
// from.
type SelectPart struct {
	// HasMeta is false for an object without metadata.
	HasMeta bool
	// Namespace is the object's namespace when it is not the one its key
	// names (Derived false).
	Namespace []byte
	// Derived: the namespace is KeyNamespace of the key.
	Derived bool
	// Labels are the object's labels.
	Labels Labels
}

// NamespaceOf returns the namespace of the object stored under key (an
// object key, not an items bucket key). It aliases key or p.
func (p *SelectPart) NamespaceOf(key []byte) []byte {
	if p.Derived {
		return KeyNamespace(key)
	}
	return p.Namespace
}

// ParseSelectPart parses the select part at the start of b and returns it
// and the rest of b. It checks the whole part, so that the labels can be
// read without errors afterwards.
func ParseSelectPart(b []byte) (SelectPart, []byte, error) {
	var p SelectPart
	fail := func(err error) (SelectPart, []byte, error) {
		return SelectPart{}, nil, fmt.Errorf("select part: %w", err)
	}
	if len(b) == 0 {
		return fail(errors.New("truncated"))
	}
	switch b[0] {
	case selNoMeta:
		return p, b[1:], nil
	case selNamespaceFromKey:
		p.Derived, b = true, b[1:]
	default:
		ns, rest, err := ReadRaw(b, false)
		if err != nil {
			return fail(fmt.Errorf("namespace: %w", err))
		}
		p.Namespace, b = ns, rest
	}
	p.HasMeta = true
	n, rest, err := readLen(b, 0x80, 0xde, 0xdf)
	if err != nil {
		return fail(fmt.Errorf("labels: %w", err))
	}
	if n > len(rest) {
		return fail(errors.New("labels: map length exceeds the data"))
	}
	pairs := rest
	for range 2 * n {
		if _, rest, err = ReadRaw(rest, false); err != nil {
			return fail(fmt.Errorf("labels: %w", err))
		}
	}
	p.Labels = Labels{n: n, b: pairs[:len(pairs)-len(rest)]}
	return p, rest, nil
}

// Labels are the labels of a select part, read in place: a labels.Labels
// that label selectors match without building a map. The zero value has
// no labels.
type Labels struct {
	n int    // pairs
	b []byte // n checked pairs of msgpack str
}

var _ labels.Labels = (*Labels)(nil)

// Len returns the number of labels.
func (l *Labels) Len() int { return l.n }

// LookupRaw returns the value of label, aliasing the entry, and whether
// the object has it.
func (l *Labels) LookupRaw(label string) ([]byte, bool) {
	p := l.b
	for range l.n {
		k, rest, _ := ReadRaw(p, false)
		v, rest, _ := ReadRaw(rest, false)
		p = rest
		if string(k) == label {
			return v, true
		}
	}
	return nil, false
}

// Lookup returns the value of label and whether the object has it.
func (l *Labels) Lookup(label string) (string, bool) {
	v, ok := l.LookupRaw(label)
	return string(v), ok
}

// Has reports whether the object has label.
func (l *Labels) Has(label string) bool {
	_, ok := l.LookupRaw(label)
	return ok
}

// Get returns the value of label, "" if the object has no such label.
func (l *Labels) Get(label string) string {
	v, _ := l.Lookup(label)
	return v
}

// Map returns the labels as a map (nil without labels).
func (l *Labels) Map() map[string]string {
	if l.n == 0 {
		return nil
	}
	m := make(map[string]string, l.n)
	p := l.b
	for range l.n {
		k, rest, _ := ReadRaw(p, false)
		v, rest, _ := ReadRaw(rest, false)
		p = rest
		m[string(k)] = string(v)
	}
	return m
}
