// Package textdiff computes line diffs and prints them in the unified
// format of diff -u and git diff.
//
// The edit script is Myers' O(ND) shortest edit script, after the common
// prefix and suffix are trimmed. Its cost grows with the number of differing
// lines D: beyond MaxEdits the middle part is reported as replaced
// wholesale, a correct but longer diff, so that the time and memory of a
// diff stay bounded for any input.
package textdiff

import (
	"fmt"
	"strings"
)

// MaxEdits is the number of differing lines beyond which Unified stops
// searching for the shortest edit script (see the package documentation).
const MaxEdits = 1000

// op is one line of an edit script.
type op struct {
	kind byte // ' ', '-' or '+'
	line string
}

// Unified returns the unified diff of a and b, with context lines of
// context around each change, under the file names aName and bName. It
// returns "" when a and b are equal. A text that does not end with a
// newline gets the "\ No newline at end of file" marker.
func Unified(aName, bName, a, b string, context int) string {
	if a == b {
		return ""
	}
	context = max(context, 0)
	al, bl := splitLines(a), splitLines(b)
	ops := diff(al, bl)
	var out strings.Builder
	fmt.Fprintf(&out, "--- %s\n+++ %s\n", aName, bName)
	// Walk the script, cutting hunks around changes.
	for i := 0; i < len(ops); {
		if ops[i].kind == ' ' {
			i++
			continue
		}
		// A change at i: the hunk starts context lines earlier and extends
		// while the changes are at most 2*context lines apart.
		start := max(i-context, 0)
		end := i
		for j := i; j < len(ops); j++ {
			if ops[j].kind != ' ' {
				end = j + 1
				continue
			}
			if j-end >= 2*context {
				break
			}
		}
		end = min(end+context, len(ops))
		writeHunk(&out, ops, start, end)
		i = end
	}
	return out.String()
}

// writeHunk writes ops[start:end] with its @@ header.
func writeHunk(out *strings.Builder, ops []op, start, end int) {
	aStart, bStart := 1, 1
	for _, o := range ops[:start] {
		if o.kind != '+' {
			aStart++
		}
		if o.kind != '-' {
			bStart++
		}
	}
	var aCount, bCount int
	for _, o := range ops[start:end] {
		if o.kind != '+' {
			aCount++
		}
		if o.kind != '-' {
			bCount++
		}
	}
	fmt.Fprintf(out, "@@ -%s +%s @@\n", hunkRange(aStart, aCount), hunkRange(bStart, bCount))
	for _, o := range ops[start:end] {
		out.WriteByte(o.kind)
		if strings.HasSuffix(o.line, "\n") {
			out.WriteString(o.line)
		} else {
			out.WriteString(o.line)
			out.WriteString("\n\\ No newline at end of file\n")
		}
	}
}

// hunkRange formats a hunk's line range as diff -u does: "start,count",
// "start" alone for one line, and for an empty range the line before it.
func hunkRange(start, count int) string {
	switch count {
	case 0:
		return fmt.Sprintf("%d,0", start-1)
	case 1:
		return fmt.Sprint(start)
	}
	return fmt.Sprintf("%d,%d", start, count)
}

// splitLines splits s after each newline; the last line may lack one.
func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	lines := strings.SplitAfter(s, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}

// diff returns an edit script turning a into b.
func diff(a, b []string) []op {
	prefix := 0
	for prefix < len(a) && prefix < len(b) && a[prefix] == b[prefix] {
		prefix++
	}
	suffix := 0
	for suffix < len(a)-prefix && suffix < len(b)-prefix && a[len(a)-1-suffix] == b[len(b)-1-suffix] {
		suffix++
	}
	ops := make([]op, 0, len(a)+len(b))
	for _, l := range a[:prefix] {
		ops = append(ops, op{' ', l})
	}
	ops = append(ops, myers(a[prefix:len(a)-suffix], b[prefix:len(b)-suffix])...)
	for _, l := range a[len(a)-suffix:] {
		ops = append(ops, op{' ', l})
	}
	return ops
}

// myers returns the shortest edit script from a to b, or delete-all then
// insert-all when it has more than MaxEdits edits.
func myers(a, b []string) []op {
	n, m := len(a), len(b)
	maxD := min(n+m, MaxEdits)
	// v[k+offset] is the furthest x reached on diagonal k; trace keeps a
	// copy of v[offset-d .. offset+d] after each step d.
	offset := maxD + 1
	v := make([]int, 2*offset+1)
	var trace [][]int
	found := -1
	for d := 0; d <= maxD && found < 0; d++ {
		for k := -d; k <= d; k += 2 {
			var x int
			if k == -d || (k != d && v[offset+k-1] < v[offset+k+1]) {
				x = v[offset+k+1] // down: an insertion
			} else {
				x = v[offset+k-1] + 1 // right: a deletion
			}
			y := x - k
			for x < n && y < m && a[x] == b[y] {
				x, y = x+1, y+1
			}
			v[offset+k] = x
			if x >= n && y >= m {
				found = d
				break
			}
		}
		trace = append(trace, append([]int(nil), v[offset-d:offset+d+1]...))
	}
	if found < 0 {
		ops := make([]op, 0, n+m)
		for _, l := range a {
			ops = append(ops, op{'-', l})
		}
		for _, l := range b {
			ops = append(ops, op{'+', l})
		}
		return ops
	}
	// Backtrack from (n, m) through the trace.
	rev := make([]op, 0, n+m)
	x, y := n, m
	for d := found; d > 0; d-- {
		prev := trace[d-1] // indexes -(d-1) .. d-1, at k+(d-1)
		at := func(k int) int { return prev[k+d-1] }
		k := x - y
		var prevK int
		if k == -d || (k != d && at(k-1) < at(k+1)) {
			prevK = k + 1
		} else {
			prevK = k - 1
		}
		prevX := at(prevK)
		prevY := prevX - prevK
		for x > prevX && y > prevY {
			x, y = x-1, y-1
			rev = append(rev, op{' ', a[x]})
		}
		if x == prevX {
			y--
			rev = append(rev, op{'+', b[y]})
		} else {
			x--
			rev = append(rev, op{'-', a[x]})
		}
	}
	for x > 0 && y > 0 {
		x, y = x-1, y-1
		rev = append(rev, op{' ', a[x]})
	}
	ops := make([]op, len(rev))
	for i, o := range rev {
		ops[len(rev)-1-i] = o
	}
	return ops
}
