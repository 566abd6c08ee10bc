// Package jsondoc renders a JSON document as kubectl prints objects: JSON
// indented by four spaces with sorted keys (kubectl's -o json of
// unstructured objects), and YAML as sigs.k8s.io/yaml.Marshal writes it
// (kubectl's -o yaml: go-yaml v2 after a JSON round trip), byte for byte,
// without that round trip's maps and without its second parse.
//
// A Doc holds one parsed document as a tree of nodes in slices that are
// reused from one document to the next: rendering many objects one after
// the other allocates nothing once the slices have grown. A Doc is used by
// one goroutine at a time.
//
// The YAML is go-yaml v2's emitter (go.yaml.in/yaml/v2, the one
// sigs.k8s.io/yaml uses) ported to this tree: its key order (numbers in
// keys compared by value), its choice of scalar style (plain, single- or
// double-quoted, literal), its folding of long scalars at 80 columns, its
// indentation of sequences in mappings and its "? key" form for keys longer
// than 128 bytes. Differential and fuzz tests compare both renderings with
// encoding/json and sigs.k8s.io/yaml.
package jsondoc

import (
	"errors"
	"fmt"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// ErrSyntax is returned by Parse for bytes that are not one JSON value.
var ErrSyntax = errors.New("jsondoc: invalid JSON")

// kind is the type of a node.
type kind uint8

const (
	kindNull kind = iota
	kindFalse
	kindTrue
	kindNumber
	kindString
	kindObject
	kindArray
)

// node is one value of the tree. The members of an object are its
// children in pairs, key (a string) then value; the elements of an array
// its children. Children are linked by next, in document order.
type node struct {
	kind kind
	// deleted marks an object member (its key node) removed by Delete.
	deleted bool
	// first is the first child of a container, -1 if none; last its last
	// (for appending); next the next sibling, -1 at the end.
	first, last, next int32
	// n is the number of children (members count twice) not deleted.
	n int32
	// off and end delimit a scalar's text: for a number its JSON text in
	// the source, for a string its decoded text in Doc.text.
	off, end int32
}

// Node is a value of a Doc, valid until the Doc parses another document.
type Node int32

// Doc is a parsed JSON document.
type Doc struct {
	src   []byte
	nodes []node
	// text holds the decoded strings.
	text []byte
	pos  int
	// scratch is reused by the renderings for sorting members.
	scratch []int32
	yaml    emitter
	// keys caches the analysis of the keys seen (see keyInfo).
	keys map[string]keyInfo
}

// Root is the document's top-level value.
func (d *Doc) Root() Node { return 0 }

// Parse parses src, one JSON value with optional surrounding white space,
// replacing the document d held. d keeps a reference to src (numbers are
// rendered from it) until the next Parse.
func (d *Doc) Parse(src []byte) error {
	d.src, d.pos = src, 0
	d.nodes = d.nodes[:0]
	d.text = d.text[:0]
	d.skipSpace()
	if _, err := d.value(0); err != nil {
		return err
	}
	d.skipSpace()
	if d.pos != len(d.src) {
		return d.syntaxError("after the top-level value")
	}
	return nil
}

func (d *Doc) syntaxError(what string) error {
	return fmt.Errorf("%w: offset %d: unexpected %s", ErrSyntax, d.pos, what)
}

func (d *Doc) skipSpace() {
	for d.pos < len(d.src) {
		switch d.src[d.pos] {
		case ' ', '\t', '\n', '\r':
			d.pos++
		default:
			return
		}
	}
}

// newNode appends a node and returns its index.
func (d *Doc) newNode(k kind) int32 {
	d.nodes = append(d.nodes, node{kind: k, first: -1, last: -1, next: -1})
	return int32(len(d.nodes) - 1)
}

// appendChild links child as the last child of parent.
func (d *Doc) appendChild(parent, child int32) {
	p := &d.nodes[parent]
	if p.last < 0 {
		p.first = child
	} else {
		d.nodes[p.last].next = child
	}
	p.last = child
	p.n++
}

// maxDepth bounds nesting, as encoding/json's decoder does (10,000).
const maxDepth = 10000

// value parses the value at d.pos into a new node.
func (d *Doc) value(depth int) (int32, error) {
	if depth > maxDepth {
		return 0, fmt.Errorf("%w: nested too deeply", ErrSyntax)
	}
	if d.pos >= len(d.src) {
		return 0, d.syntaxError("end of input")
	}
	switch c := d.src[d.pos]; {
	case c == '{':
		return d.object(depth)
	case c == '[':
		return d.array(depth)
	case c == '"':
		n := d.newNode(kindString)
		off := int32(len(d.text))
		if err := d.str(); err != nil {
			return 0, err
		}
		d.nodes[n].off, d.nodes[n].end = off, int32(len(d.text))
		return n, nil
	case c == 't':
		return d.literal("true", kindTrue)
	case c == 'f':
		return d.literal("false", kindFalse)
	case c == 'n':
		return d.literal("null", kindNull)
	case c == '-' || c >= '0' && c <= '9':
		return d.number()
	}
	return 0, d.syntaxError(strconv.QuoteRune(rune(d.src[d.pos])))
}

func (d *Doc) literal(lit string, k kind) (int32, error) {
	if len(d.src)-d.pos < len(lit) || string(d.src[d.pos:d.pos+len(lit)]) != lit {
		return 0, d.syntaxError("literal")
	}
	d.pos += len(lit)
	return d.newNode(k), nil
}

func (d *Doc) number() (int32, error) {
	start := d.pos
	if d.src[d.pos] == '-' {
		d.pos++
	}
	digits := func() int {
		n := 0
		for d.pos < len(d.src) && d.src[d.pos] >= '0' && d.src[d.pos] <= '9' {
			d.pos++
			n++
		}
		return n
	}
	if d.pos < len(d.src) && d.src[d.pos] == '0' {
		d.pos++
	} else if digits() == 0 {
		return 0, d.syntaxError("number")
	}
	if d.pos < len(d.src) && d.src[d.pos] == '.' {
		d.pos++
		if digits() == 0 {
			return 0, d.syntaxError("number")
		}
	}
	if d.pos < len(d.src) && (d.src[d.pos] == 'e' || d.src[d.pos] == 'E') {
		d.pos++
		if d.pos < len(d.src) && (d.src[d.pos] == '+' || d.src[d.pos] == '-') {
			d.pos++
		}
		if digits() == 0 {
			return 0, d.syntaxError("number")
		}
	}
	n := d.newNode(kindNumber)
	d.nodes[n].off, d.nodes[n].end = int32(start), int32(d.pos)
	return n, nil
}

// str decodes the string at d.pos onto d.text, as encoding/json decodes
// it (invalid UTF-8 and lone surrogates become U+FFFD).
func (d *Doc) str() error {
	d.pos++ // the quote
	for {
		// The run of bytes that need no decoding.
		start := d.pos
		for d.pos < len(d.src) {
			c := d.src[d.pos]
			if c == '"' || c == '\\' || c < 0x20 || c >= utf8.RuneSelf {
				break
			}
			d.pos++
		}
		d.text = append(d.text, d.src[start:d.pos]...)
		if d.pos >= len(d.src) {
			return d.syntaxError("end of input in a string")
		}
		switch c := d.src[d.pos]; {
		case c == '"':
			d.pos++
			return nil
		case c < 0x20:
			return d.syntaxError("control character in a string")
		case c >= utf8.RuneSelf:
			r, size := utf8.DecodeRune(d.src[d.pos:])
			if r == utf8.RuneError && size == 1 {
				d.text = utf8.AppendRune(d.text, utf8.RuneError)
			} else {
				d.text = append(d.text, d.src[d.pos:d.pos+size]...)
			}
			d.pos += size
		default: // backslash
			if d.pos+1 >= len(d.src) {
				return d.syntaxError("end of input in a string")
			}
			e := d.src[d.pos+1]
			d.pos += 2
			switch e {
			case '"', '\\', '/':
				d.text = append(d.text, e)
			case 'b':
				d.text = append(d.text, '\b')
			case 'f':
				d.text = append(d.text, '\f')
			case 'n':
				d.text = append(d.text, '\n')
			case 'r':
				d.text = append(d.text, '\r')
			case 't':
				d.text = append(d.text, '\t')
			case 'u':
				r, ok := d.hex4()
				if !ok {
					return d.syntaxError("escape")
				}
				if utf16.IsSurrogate(r) {
					r2 := rune(-1)
					if d.pos+1 < len(d.src) && d.src[d.pos] == '\\' && d.src[d.pos+1] == 'u' {
						save := d.pos
						d.pos += 2
						var ok2 bool
						if r2, ok2 = d.hex4(); !ok2 {
							return d.syntaxError("escape")
						}
						if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
							r = dec
							d.text = utf8.AppendRune(d.text, r)
							continue
						}
						d.pos = save
					}
					r = utf8.RuneError
				}
				d.text = utf8.AppendRune(d.text, r)
			default:
				return d.syntaxError("escape")
			}
		}
	}
}

func (d *Doc) hex4() (rune, bool) {
	if len(d.src)-d.pos < 4 {
		return 0, false
	}
	var r rune
	for _, c := range d.src[d.pos : d.pos+4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	d.pos += 4
	return r, true
}

func (d *Doc) object(depth int) (int32, error) {
	n := d.newNode(kindObject)
	return d.container(n, '}', "an object", "object member separator", func() error {
		if d.pos >= len(d.src) || d.src[d.pos] != '"' {
			return d.syntaxError("object key")
		}
		k, err := d.value(depth + 1)
		if err != nil {
			return err
		}
		d.skipSpace()
		if d.pos >= len(d.src) || d.src[d.pos] != ':' {
			return d.syntaxError("object member")
		}
		d.pos++
		d.skipSpace()
		v, err := d.value(depth + 1)
		if err != nil {
			return err
		}
		d.appendChild(n, k)
		d.appendChild(n, v)
		return nil
	})
}

func (d *Doc) array(depth int) (int32, error) {
	n := d.newNode(kindArray)
	return d.container(n, ']', "an array", "array element separator", func() error {
		v, err := d.value(depth + 1)
		if err != nil {
			return err
		}
		d.appendChild(n, v)
		return nil
	})
}

// container parses the members of the object or array n (in names which)
// from its opening bracket to close: member parses one, from its first
// byte, and adds it to n; sep names the separator expected after one.
func (d *Doc) container(n int32, close byte, in, sep string, member func() error) (int32, error) {
	if d.open(close) {
		return n, nil
	}
	for {
		d.skipSpace()
		if err := member(); err != nil {
			return 0, err
		}
		if last, err := d.next(close, in, sep); err != nil {
			return 0, err
		} else if last {
			return n, nil
		}
	}
}

// open consumes the opening bracket of an object or array and the space
// after it, and reports whether close follows at once (an empty one,
// consumed too).
func (d *Doc) open(close byte) (empty bool) {
	d.pos++
	d.skipSpace()
	if d.pos < len(d.src) && d.src[d.pos] == close {
		d.pos++
		return true
	}
	return false
}

// next consumes what follows a member of an object or an element of an
// array (in names which): a comma, before another one, or close, after the
// last (last is true). Anything else is a syntax error, sep naming what
// was expected.
func (d *Doc) next(close byte, in, sep string) (last bool, err error) {
	d.skipSpace()
	if d.pos >= len(d.src) {
		return false, d.syntaxError("end of input in " + in)
	}
	switch d.src[d.pos] {
	case ',':
		d.pos++
		return false, nil
	case close:
		d.pos++
		return true, nil
	default:
		return false, d.syntaxError(sep)
	}
}

// text returns the decoded text of a string node.
func (d *Doc) textOf(n int32) []byte { return d.text[d.nodes[n].off:d.nodes[n].end] }

// IsObject reports whether n is an object.
func (d *Doc) IsObject(n Node) bool { return d.nodes[n].kind == kindObject }

// Len is the number of members of an object or elements of an array.
func (d *Doc) Len(n Node) int {
	l := int(d.nodes[n].n)
	if d.nodes[n].kind == kindObject {
		l /= 2
	}
	return l
}

// member returns the key node of the member key of object n, -1 if there
// is none.
func (d *Doc) member(n Node, key string) int32 {
	if d.nodes[n].kind != kindObject {
		return -1
	}
	for k := d.nodes[n].first; k >= 0; k = d.nodes[d.nodes[k].next].next {
		if !d.nodes[k].deleted && string(d.textOf(k)) == key {
			return k
		}
	}
	return -1
}

// Get returns the value of the member key of object n.
func (d *Doc) Get(n Node, key string) (Node, bool) {
	k := d.member(n, key)
	if k < 0 {
		return 0, false
	}
	return Node(d.nodes[k].next), true
}

// Lookup follows keys from n through nested objects.
func (d *Doc) Lookup(n Node, keys ...string) (Node, bool) {
	for _, k := range keys {
		var ok bool
		if n, ok = d.Get(n, k); !ok {
			return 0, false
		}
	}
	return n, true
}

// String returns the text of a string node; ok is false for other kinds.
func (d *Doc) String(n Node) (s string, ok bool) {
	if d.nodes[n].kind != kindString {
		return "", false
	}
	return string(d.textOf(int32(n))), true
}

// Delete removes the member key of object n; it reports whether there was
// one.
func (d *Doc) Delete(n Node, key string) bool {
	k := d.member(n, key)
	if k < 0 {
		return false
	}
	d.nodes[k].deleted = true
	d.nodes[n].n -= 2
	return true
}

// SetString sets the member key of object n to the string value,
// replacing the value of an existing member.
func (d *Doc) SetString(n Node, key, value string) {
	v := d.newNode(kindString)
	off := int32(len(d.text))
	d.text = append(d.text, value...)
	d.nodes[v].off, d.nodes[v].end = off, int32(len(d.text))
	if k := d.member(n, key); k >= 0 {
		// Link the new value in place of the old.
		old := d.nodes[k].next
		d.nodes[v].next = d.nodes[old].next
		d.nodes[k].next = v
		if d.nodes[n].last == old {
			d.nodes[n].last = v
		}
		return
	}
	k := d.newNode(kindString)
	off = int32(len(d.text))
	d.text = append(d.text, key...)
	d.nodes[k].off, d.nodes[k].end = off, int32(len(d.text))
	d.appendChild(int32(n), k)
	d.appendChild(int32(n), v)
}

// members appends to d.scratch the key nodes of object n that are not
// deleted and returns them (a slice of d.scratch, valid until the next
// call).
func (d *Doc) members(n int32) []int32 {
	start := len(d.scratch)
	for k := d.nodes[n].first; k >= 0; k = d.nodes[d.nodes[k].next].next {
		if !d.nodes[k].deleted {
			d.scratch = append(d.scratch, k)
		}
	}
	return d.scratch[start:]
}
