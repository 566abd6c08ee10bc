package jsondoc

import "unicode/utf8"

// The emitter of go-yaml v2 (go.yaml.in/yaml/v2, emitterc.go), reduced to
// what sigs.k8s.io/yaml.Marshal asks of it: block mappings and sequences,
// empty ones in flow style ({} and []), and scalars in plain, single-
// quoted, double-quoted and literal style, with unicode output, an
// indentation of 2 and a width of 80. Names follow the original so that
// the two can be compared line by line.

// scalarStyle is a scalar's presentation.
type scalarStyle uint8

const (
	stylePlain scalarStyle = iota
	styleSingleQuoted
	styleDoubleQuoted
	styleLiteral
)

const (
	bestIndent = 2
	bestWidth  = 80
)

// scalarData is yaml_emitter_analyze_scalar's analysis.
type scalarData struct {
	// simple: ASCII without spaces, line breaks or characters to escape
	// (set by analyzeSimple), which every style writes as it is.
	simple              bool
	multiline           bool
	flowPlainAllowed    bool
	blockPlainAllowed   bool
	singleQuotedAllowed bool
	blockAllowed        bool
}

// emitter is the output state of go-yaml v2's emitter.
type emitter struct {
	out     []byte
	indent  int
	indents []int
	column  int
	// whitespace: the last character written is white space; indention:
	// only indentation has been written on the line; openEnded: the
	// document needs "..." at the end of the stream.
	whitespace, indention, openEnded bool
	flowLevel                        int
	// The context of the node being emitted.
	rootContext, sequenceContext, mappingContext, simpleKeyContext bool
}

// reset prepares e for a new stream (yaml_emitter_emit_stream_start).
func (e *emitter) reset(out []byte) {
	e.out = out
	e.indent = -1
	e.indents = e.indents[:0]
	e.column = 0
	e.whitespace, e.indention, e.openEnded = true, true, false
	e.flowLevel = 0
}

func (e *emitter) put(b byte) {
	e.out = append(e.out, b)
	e.column++
}

func (e *emitter) putBreak() {
	e.out = append(e.out, '\n')
	e.column = 0
}

// write copies the character at s[*i].
func (e *emitter) write(s []byte, i *int) {
	w := width(s[*i])
	e.out = append(e.out, s[*i:*i+w]...)
	e.column++
	*i += w
}

func (e *emitter) writeAll(s string) {
	for i := 0; i < len(s); i++ { // ASCII indicators only
		e.put(s[i])
	}
}

// writeBreak copies the line break at s[*i].
func (e *emitter) writeBreak(s []byte, i *int) {
	if s[*i] == '\n' {
		e.putBreak()
		*i++
		return
	}
	e.write(s, i)
	e.column = 0
}

func (e *emitter) increaseIndent(flow, indentless bool) {
	e.indents = append(e.indents, e.indent)
	if e.indent < 0 {
		if flow {
			e.indent = bestIndent
		} else {
			e.indent = 0
		}
	} else if !indentless {
		e.indent += bestIndent
	}
}

func (e *emitter) popIndent() {
	e.indent = e.indents[len(e.indents)-1]
	e.indents = e.indents[:len(e.indents)-1]
}

func (e *emitter) writeIndent() {
	indent := max(e.indent, 0)
	if !e.indention || e.column > indent || (e.column == indent && !e.whitespace) {
		e.putBreak()
	}
	for e.column < indent {
		e.put(' ')
	}
	e.whitespace = true
	e.indention = true
}

func (e *emitter) writeIndicator(indicator string, needWhitespace, isWhitespace, isIndention bool) {
	if needWhitespace && !e.whitespace {
		e.put(' ')
	}
	e.writeAll(indicator)
	e.whitespace = isWhitespace
	e.indention = e.indention && isIndention
	e.openEnded = false
}

// setContext is the start of yaml_emitter_emit_node.
func (e *emitter) setContext(root, sequence, mapping, simpleKey bool) {
	e.rootContext, e.sequenceContext, e.mappingContext, e.simpleKeyContext = root, sequence, mapping, simpleKey
}

// emitScalar emits value in the requested style (the encoder's choice),
// as yaml_emitter_emit_scalar does with the analysis sd of value.
func (e *emitter) emitScalar(value []byte, requested scalarStyle, sd *scalarData) {
	style := e.selectScalarStyle(value, requested, sd)
	if sd.simple && (style == stylePlain || style == styleDoubleQuoted) {
		// What the writers below do with such a value, at once: no
		// folding without spaces, nothing to escape.
		if style == stylePlain {
			if !e.whitespace {
				e.put(' ')
			}
			e.out = append(e.out, value...)
			e.column += len(value)
			e.whitespace, e.indention = false, false
			if e.rootContext {
				e.openEnded = true
			}
			return
		}
		e.writeIndicator(`"`, true, false, false)
		e.out = append(e.out, value...)
		e.column += len(value)
		e.writeIndicator(`"`, false, false, false)
		e.whitespace, e.indention = false, false
		return
	}
	e.increaseIndent(true, false)
	allowBreaks := !e.simpleKeyContext
	switch style {
	case stylePlain:
		e.writePlainScalar(value, allowBreaks)
	case styleSingleQuoted:
		e.writeSingleQuotedScalar(value, allowBreaks)
	case styleDoubleQuoted:
		e.writeDoubleQuotedScalar(value, allowBreaks)
	case styleLiteral:
		e.writeLiteralScalar(value)
	}
	e.popIndent()
}

// selectScalarStyle is yaml_emitter_select_scalar_style for implicit
// scalars without tags.
func (e *emitter) selectScalarStyle(value []byte, style scalarStyle, sd *scalarData) scalarStyle {
	if e.simpleKeyContext && sd.multiline {
		style = styleDoubleQuoted
	}
	if style == stylePlain {
		if e.flowLevel > 0 && !sd.flowPlainAllowed || e.flowLevel == 0 && !sd.blockPlainAllowed {
			style = styleSingleQuoted
		}
		if len(value) == 0 && (e.flowLevel > 0 || e.simpleKeyContext) {
			style = styleSingleQuoted
		}
	}
	if style == styleSingleQuoted && !sd.singleQuotedAllowed {
		style = styleDoubleQuoted
	}
	if style == styleLiteral && (!sd.blockAllowed || e.flowLevel > 0 || e.simpleKeyContext) {
		style = styleDoubleQuoted
	}
	return style
}

// analyzeScalar is yaml_emitter_analyze_scalar with unicode output.
func analyzeScalar(value []byte) scalarData {
	if sd, ok := analyzeSimple(value); ok {
		return sd
	}
	if len(value) == 0 {
		return scalarData{blockPlainAllowed: true, singleQuotedAllowed: true}
	}
	var (
		blockIndicators, flowIndicators, lineBreaks, specialCharacters bool
		leadingSpace, leadingBreak, trailingSpace, trailingBreak       bool
		breakSpace, spaceBreak                                         bool
		previousSpace, previousBreak                                   bool
	)
	if len(value) >= 3 && (value[0] == '-' && value[1] == '-' && value[2] == '-' || value[0] == '.' && value[1] == '.' && value[2] == '.') {
		blockIndicators, flowIndicators = true, true
	}
	precededByWhitespace := true
	for i, w := 0, 0; i < len(value); i += w {
		w = width(value[i])
		followedByWhitespace := i+w >= len(value) || isBlank(value, i+w)
		if i == 0 {
			switch value[i] {
			case '#', ',', '[', ']', '{', '}', '&', '*', '!', '|', '>', '\'', '"', '%', '@', '`':
				flowIndicators, blockIndicators = true, true
			case '?', ':':
				flowIndicators = true
				if followedByWhitespace {
					blockIndicators = true
				}
			case '-':
				if followedByWhitespace {
					flowIndicators, blockIndicators = true, true
				}
			}
		} else {
			switch value[i] {
			case ',', '?', '[', ']', '{', '}':
				flowIndicators = true
			case ':':
				flowIndicators = true
				if followedByWhitespace {
					blockIndicators = true
				}
			case '#':
				if precededByWhitespace {
					flowIndicators, blockIndicators = true, true
				}
			}
		}
		if !isPrintable(value, i) {
			specialCharacters = true
		}
		switch {
		case value[i] == ' ':
			if i == 0 {
				leadingSpace = true
			}
			if i+w == len(value) {
				trailingSpace = true
			}
			if previousBreak {
				breakSpace = true
			}
			previousSpace, previousBreak = true, false
		case isBreak(value, i):
			lineBreaks = true
			if i == 0 {
				leadingBreak = true
			}
			if i+w == len(value) {
				trailingBreak = true
			}
			if previousSpace {
				spaceBreak = true
			}
			previousSpace, previousBreak = false, true
		default:
			previousSpace, previousBreak = false, false
		}
		precededByWhitespace = isBlankz(value, i)
	}
	sd := scalarData{multiline: lineBreaks, flowPlainAllowed: true, blockPlainAllowed: true, singleQuotedAllowed: true, blockAllowed: true}
	if leadingSpace || leadingBreak || trailingSpace || trailingBreak {
		sd.flowPlainAllowed, sd.blockPlainAllowed = false, false
	}
	if trailingSpace {
		sd.blockAllowed = false
	}
	if breakSpace {
		sd.flowPlainAllowed, sd.blockPlainAllowed, sd.singleQuotedAllowed = false, false, false
	}
	if spaceBreak || specialCharacters {
		sd.flowPlainAllowed, sd.blockPlainAllowed, sd.singleQuotedAllowed, sd.blockAllowed = false, false, false, false
	}
	if lineBreaks {
		sd.flowPlainAllowed, sd.blockPlainAllowed = false, false
	}
	if flowIndicators {
		sd.flowPlainAllowed = false
	}
	if blockIndicators {
		sd.blockPlainAllowed = false
	}
	return sd
}

func (e *emitter) writePlainScalar(value []byte, allowBreaks bool) {
	if !e.whitespace {
		e.put(' ')
	}
	e.writeFolded(value, allowBreaks, false)
	e.whitespace = false
	e.indention = false
	if e.rootContext {
		e.openEnded = true
	}
}

func (e *emitter) writeSingleQuotedScalar(value []byte, allowBreaks bool) {
	e.writeIndicator("'", true, false, false)
	e.writeFolded(value, allowBreaks, true)
	e.writeIndicator("'", false, false, false)
	e.whitespace = false
	e.indention = false
}

// writeFolded writes the text of a plain scalar, or of a single-quoted one
// (quoted: its single quotes doubled): a line break is written twice when
// it starts a run of them (YAML folds a single one into a space), and with
// allowBreaks a lone inner space past bestWidth becomes a line break.
func (e *emitter) writeFolded(value []byte, allowBreaks, quoted bool) {
	spaces, breaks := false, false
	for i := 0; i < len(value); {
		run := 0
		if !quoted {
			// Characters that are neither spaces nor line breaks, copied
			// at once: what the loop below does with each.
			run = plainRun(value[i:])
		}
		if run > 0 {
			if breaks {
				e.writeIndent()
			}
			e.out = append(e.out, value[i:i+run]...)
			e.column += utf8.RuneCount(value[i : i+run])
			i += run
			e.indention = false
			spaces, breaks = false, false
			continue
		}
		switch {
		case value[i] == ' ':
			if allowBreaks && !spaces && e.column > bestWidth && (!quoted || i > 0 && i < len(value)-1) && !isSpace(value, i+1) {
				e.writeIndent()
				i++
			} else {
				e.write(value, &i)
			}
			spaces = true
		case isBreak(value, i):
			if !breaks && value[i] == '\n' {
				e.putBreak()
			}
			e.writeBreak(value, &i)
			e.indention = true
			breaks = true
		default:
			if breaks {
				e.writeIndent()
			}
			if quoted && value[i] == '\'' {
				e.put('\'')
			}
			e.write(value, &i)
			e.indention = false
			spaces, breaks = false, false
		}
	}
}

func (e *emitter) writeDoubleQuotedScalar(value []byte, allowBreaks bool) {
	spaces := false
	e.writeIndicator(`"`, true, false, false)
	// go-yaml's is_bom looks at the start of the value wherever it is
	// called: a value that starts with a BOM has every character escaped.
	bom := len(value) >= 3 && value[0] == 0xEF && value[1] == 0xBB && value[2] == 0xBF
	for i := 0; i < len(value); {
		switch {
		case !isPrintable(value, i) || bom || isBreak(value, i) || value[i] == '"' || value[i] == '\\':
			octet := value[i]
			var w int
			var v rune
			switch {
			case octet&0x80 == 0x00:
				w, v = 1, rune(octet&0x7F)
			case octet&0xE0 == 0xC0:
				w, v = 2, rune(octet&0x1F)
			case octet&0xF0 == 0xE0:
				w, v = 3, rune(octet&0x0F)
			case octet&0xF8 == 0xF0:
				w, v = 4, rune(octet&0x07)
			}
			for k := 1; k < w; k++ {
				v = v<<6 + rune(value[i+k])&0x3F
			}
			i += w
			e.put('\\')
			switch v {
			case 0x00:
				e.put('0')
			case 0x07:
				e.put('a')
			case 0x08:
				e.put('b')
			case 0x09:
				e.put('t')
			case 0x0A:
				e.put('n')
			case 0x0b:
				e.put('v')
			case 0x0c:
				e.put('f')
			case 0x0d:
				e.put('r')
			case 0x1b:
				e.put('e')
			case 0x22:
				e.put('"')
			case 0x5c:
				e.put('\\')
			case 0x85:
				e.put('N')
			case 0xA0:
				e.put('_')
			case 0x2028:
				e.put('L')
			case 0x2029:
				e.put('P')
			default:
				if v <= 0xFF {
					e.put('x')
					w = 2
				} else if v <= 0xFFFF {
					e.put('u')
					w = 4
				} else {
					e.put('U')
					w = 8
				}
				for k := (w - 1) * 4; k >= 0; k -= 4 {
					digit := byte((v >> uint(k)) & 0x0F)
					if digit < 10 {
						e.put(digit + '0')
					} else {
						e.put(digit + 'A' - 10)
					}
				}
			}
			spaces = false
		case value[i] == ' ':
			if allowBreaks && !spaces && e.column > bestWidth && i > 0 && i < len(value)-1 {
				e.writeIndent()
				if isSpace(value, i+1) {
					e.put('\\')
				}
				i++
			} else {
				e.write(value, &i)
			}
			spaces = true
		default:
			e.write(value, &i)
			spaces = false
		}
	}
	e.writeIndicator(`"`, false, false, false)
	e.whitespace = false
	e.indention = false
}

func (e *emitter) writeBlockScalarHints(value []byte) {
	if isSpace(value, 0) || isBreak(value, 0) {
		e.writeIndicator(string(rune('0'+bestIndent)), false, false, false)
	}
	e.openEnded = false
	var chomp string
	if len(value) == 0 {
		chomp = "-"
	} else {
		i := len(value) - 1
		for value[i]&0xC0 == 0x80 {
			i--
		}
		switch {
		case !isBreak(value, i):
			chomp = "-"
		case i == 0:
			chomp = "+"
			e.openEnded = true
		default:
			i--
			for value[i]&0xC0 == 0x80 {
				i--
			}
			if isBreak(value, i) {
				chomp = "+"
				e.openEnded = true
			}
		}
	}
	if chomp != "" {
		e.writeIndicator(chomp, false, false, false)
	}
}

func (e *emitter) writeLiteralScalar(value []byte) {
	e.writeIndicator("|", true, false, false)
	e.writeBlockScalarHints(value)
	e.putBreak()
	e.indention = true
	e.whitespace = true
	breaks := true
	for i := 0; i < len(value); {
		if isBreak(value, i) {
			e.writeBreak(value, &i)
			e.indention = true
			breaks = true
		} else {
			if breaks {
				e.writeIndent()
			}
			e.write(value, &i)
			e.indention = false
			breaks = false
		}
	}
}

// plainRun is the length of the run of characters at the start of s
// that are neither spaces nor line breaks (as isBreak tells them).
func plainRun(s []byte) int {
	for i, c := range s {
		if c == ' ' || c == '\r' || c == '\n' || c == 0xC2 || c == 0xE2 {
			// 0xC2 and 0xE2 start NEL, LS and PS; a run stops before them
			// and the loop looks at them one by one.
			return i
		}
	}
	return len(s)
}

// simpleClass marks the bytes analyzeSimple accepts: letters, digits and
// the punctuation of names, labels, images, paths and times that is never
// an indicator inside a scalar.
var simpleClass = func() (t [256]bool) {
	for c := 'a'; c <= 'z'; c++ {
		t[c] = true
	}
	for c := 'A'; c <= 'Z'; c++ {
		t[c] = true
	}
	for c := '0'; c <= '9'; c++ {
		t[c] = true
	}
	for _, c := range "-._/:=+()$^;~" {
		t[c] = true
	}
	return t
}()

// analyzeSimple is analyzeScalar for the common scalars made of
// simpleClass bytes alone, which it answers without the character-by-
// character analysis; ok is false for the others.
func analyzeSimple(value []byte) (sd scalarData, ok bool) {
	if len(value) == 0 {
		return sd, false
	}
	colon := false
	for _, c := range value {
		if !simpleClass[c] {
			return sd, false
		}
		colon = colon || c == ':'
	}
	sd = scalarData{simple: true, flowPlainAllowed: true, blockPlainAllowed: true, singleQuotedAllowed: true, blockAllowed: true}
	switch value[0] {
	case ':', '-':
		// Indicators at the start followed by white space, or a
		// document marker: the general analysis.
		return sd, false
	case '.':
		if len(value) >= 3 && value[1] == '.' && value[2] == '.' {
			return sd, false
		}
	}
	if colon {
		if value[len(value)-1] == ':' {
			// Followed by the end, which go-yaml counts as white space.
			return sd, false
		}
		// Followed by a character: a flow indicator only.
		sd.flowPlainAllowed = false
	}
	return sd, true
}

// The character classes of go-yaml's yamlprivateh.go. Out-of-range reads
// are impossible on valid UTF-8, which the callers guarantee.

func width(b byte) int {
	switch {
	case b&0x80 == 0x00:
		return 1
	case b&0xE0 == 0xC0:
		return 2
	case b&0xF0 == 0xE0:
		return 3
	case b&0xF8 == 0xF0:
		return 4
	}
	return 0
}

func isPrintable(b []byte, i int) bool {
	return b[i] == 0x0A ||
		b[i] >= 0x20 && b[i] <= 0x7E ||
		b[i] == 0xC2 && b[i+1] >= 0xA0 ||
		b[i] > 0xC2 && b[i] < 0xED ||
		b[i] == 0xED && b[i+1] < 0xA0 ||
		b[i] == 0xEE ||
		b[i] == 0xEF && !(b[i+1] == 0xBB && b[i+2] == 0xBF) && !(b[i+1] == 0xBF && (b[i+2] == 0xBE || b[i+2] == 0xBF))
}

// isSpace is is_space; at the end of b (where go-yaml reads the NUL that
// ends a C string) it is false.
func isSpace(b []byte, i int) bool { return i < len(b) && b[i] == ' ' }

func isBlank(b []byte, i int) bool { return b[i] == ' ' || b[i] == '\t' }

func isBreak(b []byte, i int) bool {
	return b[i] == '\r' || b[i] == '\n' ||
		b[i] == 0xC2 && b[i+1] == 0x85 ||
		b[i] == 0xE2 && b[i+1] == 0x80 && (b[i+2] == 0xA8 || b[i+2] == 0xA9)
}

func isBlankz(b []byte, i int) bool { return isBlank(b, i) || isBreak(b, i) || b[i] == 0 }
