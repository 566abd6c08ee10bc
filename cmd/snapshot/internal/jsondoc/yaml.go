package jsondoc

import (
	"bytes"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// AppendYAML appends the value n as sigs.k8s.io/yaml.Marshal writes the
// JSON value (what kubectl -o yaml prints for one object): one YAML
// document, ending with a newline.
func (d *Doc) AppendYAML(dst []byte, n Node) []byte {
	d.scratch = d.scratch[:0]
	e := &d.yaml
	e.reset(dst)
	e.setContext(true, false, false, false)
	d.emitNode(int32(n))
	d.endDocument()
	return e.out
}

// endDocument is the emitter's DOCUMENT-END (implicit) and STREAM-END
// (after yaml.Marshal's encoder cleared open_ended: no "...").
func (d *Doc) endDocument() {
	d.yaml.writeIndent()
}

// emitNode emits n in the context set by the caller (setContext).
func (d *Doc) emitNode(n int32) {
	e := &d.yaml
	nd := &d.nodes[n]
	switch nd.kind {
	case kindNull:
		d.emitPlain(literalNull)
	case kindFalse:
		d.emitPlain(literalFalse)
	case kindTrue:
		d.emitPlain(literalTrue)
	case kindNumber:
		d.emitPlain(yamlNumber(d.src[nd.off:nd.end]))
	case kindString:
		v := d.textOf(n)
		sd := analyzeScalar(v)
		e.emitScalar(v, stringStyle(v), &sd)
	case kindArray:
		if nd.n == 0 {
			d.emitEmptyFlow("[", "]")
			return
		}
		e.increaseIndent(false, e.mappingContext && !e.indention)
		for c := nd.first; c >= 0; c = d.nodes[c].next {
			e.writeIndent()
			e.writeIndicator("-", true, false, true)
			e.setContext(false, true, false, false)
			d.emitNode(c)
		}
		e.popIndent()
	case kindObject:
		if nd.n == 0 {
			d.emitEmptyFlow("{", "}")
			return
		}
		mark := len(d.scratch)
		keys := d.members(n)
		slices.SortFunc(keys, func(a, b int32) int {
			switch ka, kb := d.textOf(a), d.textOf(b); {
			case keyLess(ka, kb):
				return -1
			case keyLess(kb, ka):
				return 1
			}
			return 0
		})
		e.increaseIndent(false, false)
		for _, k := range keys {
			d.emitMember(d.textOf(k), d.nodes[k].next)
		}
		e.popIndent()
		d.scratch = d.scratch[:mark]
	}
}

// keyInfo is what emitting a key needs to know of its text, which is the
// same for the same keys of every object: kept in Doc.keys.
type keyInfo struct {
	sd    scalarData
	style scalarStyle
}

// maxKeyCache bounds Doc.keys: objects whose keys are data (labels,
// annotations, a ConfigMap's data) would otherwise grow it without end.
const maxKeyCache = 4096

// keyInfo returns the analysis and style of key.
func (d *Doc) keyInfo(key []byte) keyInfo {
	if ki, ok := d.keys[string(key)]; ok {
		return ki
	}
	ki := keyInfo{sd: analyzeScalar(key), style: stringStyle(key)}
	if d.keys == nil {
		d.keys = map[string]keyInfo{}
	}
	if len(d.keys) < maxKeyCache {
		d.keys[string(key)] = ki
	}
	return ki
}

// emitMember emits one member of a block mapping: the key, as a simple
// key when it can be one, then the value.
func (d *Doc) emitMember(key []byte, value int32) {
	e := &d.yaml
	e.writeIndent()
	ki := d.keyInfo(key)
	sd := ki.sd
	// yaml_emitter_check_simple_key: a single-line scalar of at most
	// 128 bytes.
	if !sd.multiline && len(key) <= 128 {
		e.setContext(false, false, true, true)
		e.emitScalar(key, ki.style, &sd)
		e.writeIndicator(":", false, false, false)
	} else {
		e.writeIndicator("?", true, false, true)
		e.setContext(false, false, true, false)
		e.emitScalar(key, ki.style, &sd)
		e.writeIndent()
		e.writeIndicator(":", true, false, true)
	}
	e.setContext(false, false, true, false)
	d.emitNode(value)
}

// emitEmptyFlow emits an empty mapping or sequence in flow style.
func (d *Doc) emitEmptyFlow(open, close string) {
	e := &d.yaml
	e.writeIndicator(open, true, true, false)
	e.increaseIndent(true, false)
	e.flowLevel++
	e.flowLevel--
	e.popIndent()
	e.writeIndicator(close, false, false, false)
}

var (
	literalNull  = []byte("null")
	literalFalse = []byte("false")
	literalTrue  = []byte("true")
	// plainData is the analysis of null, true, false and every number
	// go-yaml writes: plain everywhere.
	plainData = scalarData{simple: true, flowPlainAllowed: true, blockPlainAllowed: true, singleQuotedAllowed: true, blockAllowed: true}
)

// emitPlain emits a scalar the encoder writes in plain style (numbers,
// booleans, null).
func (d *Doc) emitPlain(v []byte) {
	sd := plainData
	d.yaml.emitScalar(v, stylePlain, &sd)
}

// stringStyle is the style go-yaml's encoder asks for a string
// (encoder.stringv): literal for several lines, plain if the string reads
// back as a string, else double-quoted.
func stringStyle(s []byte) scalarStyle {
	switch {
	case bytes.IndexByte(s, '\n') >= 0:
		return styleLiteral
	case resolvesToString(s) && !isBase60Float(s):
		return stylePlain
	}
	return styleDoubleQuoted
}

// yamlNumber is how a JSON number comes out of sigs.k8s.io/yaml: go-yaml
// resolves its text to an int, a uint or a float64 and formats that.
func yamlNumber(raw []byte) []byte {
	// An integer of up to 18 digits is an int, written as it is (but
	// for -0).
	if digits := raw; len(raw) > 0 && len(raw) <= 18 {
		if digits[0] == '-' {
			digits = digits[1:]
		}
		if len(digits) > 0 && allDigits(digits) && !(raw[0] == '-' && len(digits) == 1 && digits[0] == '0') {
			return raw
		}
	}
	return []byte(yamlNumberSlow(raw))
}

func allDigits(s []byte) bool {
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

func yamlNumberSlow(raw []byte) string {
	s := string(raw)
	if i, err := strconv.ParseInt(s, 0, 64); err == nil {
		return strconv.FormatInt(i, 10)
	}
	if u, err := strconv.ParseUint(s, 0, 64); err == nil {
		return strconv.FormatUint(u, 10)
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || !isYAMLFloat(raw) {
		return s
	}
	switch {
	case math.IsInf(f, 1):
		return ".inf"
	case math.IsInf(f, -1):
		return "-.inf"
	case math.IsNaN(f):
		return ".nan"
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// The List document kubectl -o yaml prints around several objects: the
// items come between its head and its tail.
const (
	yamlListHead = "apiVersion: v1\nitems:"
	yamlListTail = "kind: List\nmetadata:\n  resourceVersion: \"\"\n"
)

// YAMLList joins items rendered by AppendListItem (by any Doc, in any
// order) into the List kubectl -o yaml prints for several objects, as
// go-yaml emits the whole List: apiVersion: v1, the items, kind: List,
// metadata with an empty resourceVersion. The zero value is not ready:
// use BeginYAMLList.
type YAMLList struct {
	// needBreak: go-yaml's write_indent breaks the line before what
	// comes next (the next item or kind).
	needBreak bool
	items     int
}

// BeginYAMLList appends the head of a List to dst.
func BeginYAMLList(dst []byte) ([]byte, *YAMLList) {
	return append(dst, yamlListHead...), &YAMLList{needBreak: true}
}

// Append appends an item that AppendListItem rendered, with its
// needBreak.
func (l *YAMLList) Append(dst, item []byte, needBreak bool) []byte {
	if l.needBreak {
		dst = append(dst, '\n')
	}
	l.needBreak = needBreak
	l.items++
	return append(dst, item...)
}

// End appends the tail of the List.
func (l *YAMLList) End(dst []byte) []byte {
	if l.items == 0 {
		return append(dst, " []\n"+yamlListTail...)
	}
	if l.needBreak {
		dst = append(dst, '\n')
	}
	return append(dst, yamlListTail...)
}

// AppendListItem appends the value n as an item of a List's items, as
// go-yaml emits it inside the whole List ("- " and the value, indented
// as an item at the List's top level), without the line break that may
// separate it from what comes before (YAMLList.Append adds it). needBreak
// reports whether what follows the item starts on a new line.
func (d *Doc) AppendListItem(dst []byte, n Node) (out []byte, needBreak bool) {
	d.scratch = d.scratch[:0]
	e := &d.yaml
	e.reset(dst)
	// The state at an item of the block sequence of the List's items
	// key, right after the line break: the List's mapping at indent 0,
	// the sequence indentless.
	e.indents = append(e.indents, -1, 0)
	e.indent = 0
	e.writeIndent()
	e.writeIndicator("-", true, false, true)
	e.setContext(false, true, false, false)
	d.emitNode(int32(n))
	// write_indent at indent 0 before the next item or kind.
	needBreak = !e.indention || e.column > 0 || !e.whitespace
	return e.out, needBreak
}

// resolvesToString reports whether go-yaml v2 reads s, written plain, as a
// string (resolve.go's resolve with no tag).
func resolvesToString(s []byte) bool {
	if len(s) == 0 {
		return false // null
	}
	switch c := s[0]; {
	case c == '+' || c == '-' || c >= '0' && c <= '9':
		if inResolveMap(s) {
			return false
		}
		return !numberOrTimestamp(s)
	case c == '.':
		if inResolveMap(s) {
			return false
		}
		_, err := strconv.ParseFloat(string(s), 64)
		return err != nil
	case strings.IndexByte("yYnNtTfFoO~", c) >= 0:
		return !inResolveMap(s)
	}
	return true
}

// resolveMap are the plain scalars go-yaml v2 reads as booleans, null,
// special floats or the merge key.
var resolveMap = map[string]bool{}

func init() {
	for _, s := range []string{
		"y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON",
		"n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF",
		"", "~", "null", "Null", "NULL",
		".nan", ".NaN", ".NAN", ".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF", "-.inf", "-.Inf", "-.INF",
		"<<",
	} {
		resolveMap[s] = true
	}
}

func inResolveMap(s []byte) bool { return resolveMap[string(s)] }

// numberOrTimestamp is resolve's case for a scalar starting with a sign
// or a digit: a timestamp, an int, a uint, a float, a binary int. The
// strconv calls are made only for text they may accept (their errors
// allocate).
func numberOrTimestamp(s []byte) bool {
	if isTimestamp(s) {
		return true
	}
	plain := s
	if bytes.IndexByte(s, '_') >= 0 {
		plain = bytes.ReplaceAll(s, []byte("_"), nil)
	}
	if intSyntax(plain) {
		if _, err := strconv.ParseInt(string(plain), 0, 64); err == nil {
			return true
		}
		if _, err := strconv.ParseUint(string(plain), 0, 64); err == nil {
			return true
		}
	}
	if isYAMLFloat(plain) {
		if _, err := strconv.ParseFloat(string(plain), 64); err == nil {
			return true
		}
	}
	if rest, ok := bytes.CutPrefix(plain, []byte("0b")); ok && binaryDigits(rest) {
		if _, err := strconv.ParseInt(string(rest), 2, 64); err == nil {
			return true
		}
		if _, err := strconv.ParseUint(string(rest), 2, 64); err == nil {
			return true
		}
	} else if rest, ok := bytes.CutPrefix(plain, []byte("-0b")); ok && binaryDigits(rest) {
		if _, err := strconv.ParseInt("-"+string(rest), 2, 64); err == nil {
			return true
		}
	}
	return false
}

// intSyntax reports whether strconv.ParseInt(s, 0, 64) or ParseUint may
// accept s (they still refuse a value out of range): a sign, then a
// 0x, 0o or 0b prefix and its digits, a 0 and octal digits, or decimal
// digits.
func intSyntax(s []byte) bool {
	if len(s) > 0 && (s[0] == '+' || s[0] == '-') {
		s = s[1:]
	}
	if len(s) == 0 {
		return false
	}
	digits := func(s []byte, ok func(c byte) bool) bool {
		if len(s) == 0 {
			return false
		}
		for _, c := range s {
			if !ok(c) {
				return false
			}
		}
		return true
	}
	if s[0] == '0' && len(s) > 1 {
		switch s[1] {
		case 'x', 'X':
			return digits(s[2:], func(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' })
		case 'o', 'O':
			return digits(s[2:], func(c byte) bool { return c >= '0' && c <= '7' })
		case 'b', 'B':
			return digits(s[2:], func(c byte) bool { return c == '0' || c == '1' })
		}
		return digits(s[1:], func(c byte) bool { return c >= '0' && c <= '7' })
	}
	return digits(s, func(c byte) bool { return c >= '0' && c <= '9' })
}

func binaryDigits(s []byte) bool {
	if len(s) == 0 {
		return false
	}
	for _, c := range s {
		if c != '0' && c != '1' {
			return false
		}
	}
	return true
}

// isTimestamp is go-yaml v2's parseTimestamp: four digits and a dash,
// then one of the formats it accepts.
func isTimestamp(s []byte) bool {
	if isRFC3339Seconds(s) {
		return true // what the first format parses, without parsing
	}
	i := 0
	for ; i < len(s) && s[i] >= '0' && s[i] <= '9'; i++ {
	}
	if i != 4 || i == len(s) || s[i] != '-' {
		return false
	}
	for _, format := range timestampFormats {
		if _, err := time.Parse(format, string(s)); err == nil {
			return true
		}
	}
	return false
}

// isRFC3339Seconds reports whether s is YYYY-MM-DDTHH:MM:SSZ with a valid
// date and time (the timestamps of Kubernetes objects), which time.Parse
// accepts with go-yaml's first format.
func isRFC3339Seconds(s []byte) bool {
	if len(s) != 20 || s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' || s[16] != ':' || s[19] != 'Z' {
		return false
	}
	n := func(i, j int) int {
		v := 0
		for _, c := range s[i:j] {
			if c < '0' || c > '9' {
				return -1
			}
			v = v*10 + int(c-'0')
		}
		return v
	}
	y, mo, d, h, mi, sec := n(0, 4), n(5, 7), n(8, 10), n(11, 13), n(14, 16), n(17, 19)
	if y < 0 || mo < 1 || mo > 12 || d < 1 || h < 0 || h > 23 || mi < 0 || mi > 59 || sec < 0 || sec > 59 {
		return false
	}
	return d <= time.Date(y, time.Month(mo)+1, 0, 0, 0, 0, 0, time.UTC).Day()
}

// timestampFormats are go-yaml v2's allowedTimestampFormats.
var timestampFormats = []string{
	"2006-1-2T15:4:5.999999999Z07:00",
	"2006-1-2t15:4:5.999999999Z07:00",
	"2006-1-2 15:4:5.999999999",
	"2006-1-2",
}

// isYAMLFloat matches go-yaml's yamlStyleFloat,
// ^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$.
func isYAMLFloat(s []byte) bool {
	i := 0
	if i < len(s) && (s[i] == '-' || s[i] == '+') {
		i++
	}
	digits := func() int {
		n := 0
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
			n++
		}
		return n
	}
	if i < len(s) && s[i] == '.' {
		i++
		if digits() == 0 {
			return false
		}
	} else {
		if digits() == 0 {
			return false
		}
		if i < len(s) && s[i] == '.' {
			i++
			digits()
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '-' || s[i] == '+') {
			i++
		}
		if digits() == 0 {
			return false
		}
	}
	return i == len(s)
}

// isBase60Float is go-yaml's isBase60Float: a sexagesimal float of YAML
// 1.1, ^[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?$, which it
// quotes.
func isBase60Float(s []byte) bool {
	if len(s) == 0 {
		return false
	}
	if c := s[0]; !(c == '+' || c == '-' || c >= '0' && c <= '9') || bytes.IndexByte(s, ':') < 0 {
		return false
	}
	i := 0
	if s[i] == '+' || s[i] == '-' {
		i++
	}
	if i >= len(s) || s[i] < '0' || s[i] > '9' {
		return false
	}
	i++
	for i < len(s) && (s[i] >= '0' && s[i] <= '9' || s[i] == '_') {
		i++
	}
	groups := 0
	for i < len(s) && s[i] == ':' {
		i++
		// [0-5]?[0-9]
		switch {
		case i+1 < len(s) && s[i] >= '0' && s[i] <= '5' && s[i+1] >= '0' && s[i+1] <= '9':
			i += 2
		case i < len(s) && s[i] >= '0' && s[i] <= '9':
			i++
		default:
			return false
		}
		groups++
	}
	if groups == 0 {
		return false
	}
	if i < len(s) && s[i] == '.' {
		i++
		for i < len(s) && (s[i] >= '0' && s[i] <= '9' || s[i] == '_') {
			i++
		}
	}
	return i == len(s)
}
