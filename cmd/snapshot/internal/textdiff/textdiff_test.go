package textdiff

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/warmcache/warmcache/cmd/snapshot/internal/golden"
)

func TestUnifiedGolden(t *testing.T) {
	yamlA := "metadata:\n  name: a\n  labels:\n    app: x\n    tier: web\n  resourceVersion: \"3\"\nspec:\n  nodeName: node-1\n  containers:\n  - image: img:1\n    name: c\nstatus:\n  phase: Pending\n"
	yamlB := "metadata:\n  name: a\n  labels:\n    app: x\n  resourceVersion: \"7\"\nspec:\n  nodeName: node-1\n  containers:\n  - image: img:2\n    name: c\nstatus:\n  phase: Running\n  podIP: 10.0.0.1\n"
	tests := []struct {
		name    string
		a, b    string
		context int
	}{
		{"yaml", yamlA, yamlB, 3},
		{"yaml-context-0", yamlA, yamlB, 0},
		{"insert-into-empty", "", "one\ntwo\n", 3},
		{"delete-all", "one\ntwo\n", "", 3},
		{"no-newline-at-end", "a\nb", "a\nc", 3},
		{"far-apart-changes", numbered(1, 30, 5, 25), numbered(1, 30, -1, -1), 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Unified("a/pod.yaml", "b/pod.yaml", tt.a, tt.b, tt.context)
			golden.Check(t, tt.name, []byte(got))
			if patched := apply(t, tt.a, got); patched != tt.b {
				t.Errorf("applying the diff gives %q, want %q", patched, tt.b)
			}
		})
	}
}

func TestUnifiedEqualIsEmpty(t *testing.T) {
	for _, s := range []string{"", "a\n", "a\nb"} {
		if got := Unified("a", "b", s, s, 3); got != "" {
			t.Errorf("Unified of equal texts %q = %q, want empty", s, got)
		}
	}
}

// numbered returns lines from..to, with lines skip1 and skip2 replaced.
func numbered(from, to, skip1, skip2 int) string {
	var b strings.Builder
	for i := from; i <= to; i++ {
		if i == skip1 || i == skip2 {
			fmt.Fprintf(&b, "changed %d\n", i)
			continue
		}
		fmt.Fprintf(&b, "line %d\n", i)
	}
	return b.String()
}

// TestRandomDiffsApplyAndAreShortest checks on random texts that the
// diff reproduces b from a and that its edit count is the shortest (by an
// LCS table).
func TestRandomDiffsApplyAndAreShortest(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 500 {
		a, b := randomText(r), randomText(r)
		d := Unified("a", "b", a, b, r.IntN(4))
		if got := apply(t, a, d); got != b {
			t.Fatalf("case %d: applying\n%s\nto %q gives %q, want %q", i, d, a, got, b)
		}
		al, bl := splitLines(a), splitLines(b)
		edits := 0
		for _, o := range diff(al, bl) {
			if o.kind != ' ' {
				edits++
			}
		}
		if want := len(al) + len(bl) - 2*lcs(al, bl); edits != want {
			t.Fatalf("case %d: %d edits, shortest is %d", i, edits, want)
		}
	}
}

func TestBeyondMaxEditsReplacesWholesale(t *testing.T) {
	var a, b strings.Builder
	for i := range MaxEdits {
		fmt.Fprintf(&a, "a%d\n", i)
		fmt.Fprintf(&b, "b%d\n", i)
	}
	d := Unified("a", "b", a.String(), b.String(), 3)
	if got := apply(t, a.String(), d); got != b.String() {
		t.Fatal("applying the wholesale diff does not give b")
	}
	if n := strings.Count(d, "\n-"); n != MaxEdits {
		t.Errorf("%d deleted lines, want %d", n, MaxEdits)
	}
}

func randomText(r *rand.Rand) string {
	var b strings.Builder
	for range r.IntN(12) {
		b.WriteString([]string{"a", "b", "c", "d"}[r.IntN(4)])
		b.WriteByte('\n')
	}
	if r.IntN(4) == 0 {
		b.WriteString("z")
	}
	return b.String()
}

func lcs(a, b []string) int {
	t := make([][]int, len(a)+1)
	for i := range t {
		t[i] = make([]int, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				t[i][j] = t[i+1][j+1] + 1
			} else {
				t[i][j] = max(t[i+1][j], t[i][j+1])
			}
		}
	}
	return t[0][0]
}

// apply applies a unified diff to a, checking the hunk headers and the
// context and deleted lines against a.
func apply(t *testing.T, a, d string) string {
	t.Helper()
	if d == "" {
		return a
	}
	src := splitLines(a)
	lines := strings.SplitAfter(d, "\n")
	if !strings.HasPrefix(lines[0], "--- ") || !strings.HasPrefix(lines[1], "+++ ") {
		t.Fatalf("no file header in %q", d)
	}
	var out []string
	pos := 0 // next line of src
	for i := 2; i < len(lines) && lines[i] != ""; {
		var aStart, aCount, bStart, bCount int
		h := lines[i]
		if !parseHunk(h, &aStart, &aCount, &bStart, &bCount) {
			t.Fatalf("bad hunk header %q", h)
		}
		first := aStart - 1
		if aCount == 0 {
			first = aStart
		}
		out = append(out, src[pos:first]...)
		pos = first
		i++
		var gotA, gotB int
		for i < len(lines) && lines[i] != "" && !strings.HasPrefix(lines[i], "@@") {
			l := lines[i]
			i++
			body := l[1:]
			if i < len(lines) && strings.HasPrefix(lines[i], `\ No newline`) {
				body = strings.TrimSuffix(body, "\n")
				i++
			}
			switch l[0] {
			case ' ', '-':
				if pos >= len(src) || src[pos] != body {
					t.Fatalf("line %d of a is %q, the diff says %q", pos+1, at(src, pos), body)
				}
				pos++
				gotA++
				if l[0] == ' ' {
					out = append(out, body)
					gotB++
				}
			case '+':
				out = append(out, body)
				gotB++
			default:
				t.Fatalf("bad diff line %q", l)
			}
		}
		if gotA != aCount || gotB != bCount {
			t.Fatalf("hunk %q has %d/%d lines", h, gotA, gotB)
		}
	}
	out = append(out, src[pos:]...)
	return strings.Join(out, "")
}

func at(s []string, i int) string {
	if i < len(s) {
		return s[i]
	}
	return "<end>"
}

func parseHunk(h string, aStart, aCount, bStart, bCount *int) bool {
	f := strings.Fields(h)
	if len(f) != 4 || f[0] != "@@" || f[3] != "@@" {
		return false
	}
	return parseRange(strings.TrimPrefix(f[1], "-"), aStart, aCount) && parseRange(strings.TrimPrefix(f[2], "+"), bStart, bCount)
}

func parseRange(s string, start, count *int) bool {
	p := strings.SplitN(s, ",", 2)
	var err error
	if *start, err = strconv.Atoi(p[0]); err != nil {
		return false
	}
	*count = 1
	if len(p) == 2 {
		*count, err = strconv.Atoi(p[1])
	}
	return err == nil
}
