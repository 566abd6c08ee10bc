package jsondoc

import (
	"bytes"
	"slices"
	"unicode/utf8"
)

// AppendJSON appends the value n as json.MarshalIndent(v, prefix, "    ")
// writes the value encoding/json decodes it to (what kubectl -o json
// prints for an unstructured object): object members sorted by key, four
// spaces of indentation after prefix on every line but the first, strings
// escaped as encoding/json escapes them (HTML characters included). No
// newline is appended.
func (d *Doc) AppendJSON(dst []byte, n Node, prefix string) []byte {
	d.scratch = d.scratch[:0]
	return d.appendJSON(dst, int32(n), prefix, 0)
}

func (d *Doc) appendJSON(dst []byte, n int32, prefix string, depth int) []byte {
	nd := &d.nodes[n]
	switch nd.kind {
	case kindNull:
		return append(dst, "null"...)
	case kindFalse:
		return append(dst, "false"...)
	case kindTrue:
		return append(dst, "true"...)
	case kindNumber:
		return append(dst, d.src[nd.off:nd.end]...)
	case kindString:
		return appendJSONString(dst, d.textOf(n))
	case kindArray:
		if nd.n == 0 {
			return append(dst, "[]"...)
		}
		dst = append(dst, '[')
		for c, i := nd.first, 0; c >= 0; c, i = d.nodes[c].next, i+1 {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = newline(dst, prefix, depth+1)
			dst = d.appendJSON(dst, c, prefix, depth+1)
		}
		dst = newline(dst, prefix, depth)
		return append(dst, ']')
	}
	// An object.
	if nd.n == 0 {
		return append(dst, "{}"...)
	}
	mark := len(d.scratch)
	keys := d.members(n)
	slices.SortFunc(keys, func(a, b int32) int { return bytes.Compare(d.textOf(a), d.textOf(b)) })
	dst = append(dst, '{')
	for i, k := range keys {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = newline(dst, prefix, depth+1)
		dst = appendJSONString(dst, d.textOf(k))
		dst = append(dst, ": "...)
		dst = d.appendJSON(dst, d.nodes[k].next, prefix, depth+1)
	}
	d.scratch = d.scratch[:mark]
	dst = newline(dst, prefix, depth)
	return append(dst, '}')
}

func newline(dst []byte, prefix string, depth int) []byte {
	dst = append(dst, '\n')
	dst = append(dst, prefix...)
	for range depth {
		dst = append(dst, "    "...)
	}
	return dst
}

const hexDigits = "0123456789abcdef"

// appendJSONString appends s quoted as encoding/json quotes a string with
// HTML escaping (its default): \" \\ \b \f \n \r \t, other control
// characters and <, >, & as \u00XX, U+2028 and U+2029 escaped, invalid
// UTF-8 as \ufffd.
func appendJSONString(dst, s []byte) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if b := s[i]; b < utf8.RuneSelf {
			if b >= 0x20 && b != '"' && b != '\\' && b != '<' && b != '>' && b != '&' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '\\', '"':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRune(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
