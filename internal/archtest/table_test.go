package archtest

import (
	"bufio"
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The package table of ARCHITECTURE.md says, per row, which packages of the
// repository the row's packages import (the "imports (of ours)" column).
// TestArchitectureTable checks it against go list, so that it cannot drift;
// ARCHITECTURE.md states the convention its rows follow.

const importsHeader = "imports (of ours)"

// tableRow is one row of the package table.
type tableRow struct {
	line    int      // in ARCHITECTURE.md, from 1
	pkg     string   // a package, or a pattern ending in "/..."
	imports []string // packages or patterns; empty for "none"
}

// parseTable reads the package table: the first table under the heading
// "## Packages" whose header has an importsHeader column.
func parseTable(text string) ([]tableRow, error) {
	lines := strings.Split(text, "\n")
	i := slices.IndexFunc(lines, func(l string) bool { return strings.TrimSpace(l) == "## Packages" })
	if i < 0 {
		return nil, fmt.Errorf("no \"## Packages\" heading")
	}
	col := -1
	for i++; i < len(lines); i++ {
		l := strings.TrimSpace(lines[i])
		if strings.HasPrefix(l, "## ") {
			break
		}
		if strings.HasPrefix(l, "|") {
			col = slices.IndexFunc(splitRow(l), func(c string) bool { return c == importsHeader })
			break
		}
	}
	if col < 0 {
		return nil, fmt.Errorf("no table with a %q column under \"## Packages\"", importsHeader)
	}
	var rows []tableRow
	for i += 2; i < len(lines) && strings.HasPrefix(strings.TrimSpace(lines[i]), "|"); i++ {
		cells := splitRow(strings.TrimSpace(lines[i]))
		if len(cells) <= col {
			return nil, fmt.Errorf("line %d: %d cells, the %q column is number %d", i+1, len(cells), importsHeader, col+1)
		}
		pkg, ok := firstCode(cells[0])
		if !ok || pkg == "" || strings.ContainsAny(pkg, " \t") {
			return nil, fmt.Errorf("line %d: the package cell %q does not start with a backquoted package path", i+1, cells[0])
		}
		imps, err := parseImports(cells[col])
		if err != nil {
			return nil, fmt.Errorf("line %d (row `%s`): %v", i+1, pkg, err)
		}
		rows = append(rows, tableRow{line: i + 1, pkg: pkg, imports: imps})
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("the package table has no rows")
	}
	return rows, nil
}

// splitRow splits a table row into its trimmed cells; a | inside backquotes
// does not split.
func splitRow(row string) []string {
	row = strings.TrimPrefix(strings.TrimSuffix(row, "|"), "|")
	var cells []string
	var cur strings.Builder
	code := false
	for _, r := range row {
		switch {
		case r == '`':
			code = !code
		case r == '|' && !code:
			cells = append(cells, strings.TrimSpace(cur.String()))
			cur.Reset()
			continue
		}
		cur.WriteRune(r)
	}
	return append(cells, strings.TrimSpace(cur.String()))
}

// firstCode returns the text between the first pair of backquotes of s.
func firstCode(s string) (string, bool) {
	_, rest, ok := strings.Cut(s, "`")
	if !ok {
		return "", false
	}
	code, _, ok := strings.Cut(rest, "`")
	return code, ok
}

// parseImports reads an imports cell: "none", or backquoted package paths
// separated by commas; text in parentheses is a comment.
func parseImports(cell string) ([]string, error) {
	var b strings.Builder
	depth := 0
	for _, r := range cell {
		switch {
		case r == '(':
			depth++
		case r == ')' && depth > 0:
			depth--
		case depth == 0:
			b.WriteRune(r)
		}
	}
	if depth != 0 {
		return nil, fmt.Errorf("unbalanced parentheses in %q", cell)
	}
	text := strings.TrimSpace(b.String())
	if text == "none" {
		return nil, nil
	}
	var imps []string
	for _, item := range strings.Split(text, ",") {
		item = strings.TrimSpace(item)
		p, ok := strings.CutPrefix(item, "`")
		if ok {
			p, ok = strings.CutSuffix(p, "`")
		}
		if !ok || p == "" || strings.ContainsAny(p, "` \t") {
			return nil, fmt.Errorf("imports: %q is not a backquoted package path (write `none` when there is none; comments go in parentheses)", item)
		}
		imps = append(imps, p)
	}
	return imps, nil
}

// owner returns the row that covers pkg: the row naming it, else the row
// "p/..." with the longest p that contains it.
func owner(rows []tableRow, pkg string) (tableRow, bool) {
	best, found := tableRow{}, false
	for _, r := range rows {
		if r.pkg == pkg {
			return r, true
		}
		if matches(r.pkg, pkg) && strings.HasSuffix(r.pkg, "/...") && (!found || len(r.pkg) > len(best.pkg)) {
			best, found = r, true
		}
	}
	return best, found
}

// checkTable compares rows with pkgs (each package of the repository, by
// path relative to the module root, with the packages of the repository
// its non-test files import) and returns what to fix, one line each.
func checkTable(rows []tableRow, pkgs map[string][]string) []string {
	var problems []string
	seen := map[string]int{}
	for _, r := range rows {
		if l, dup := seen[r.pkg]; dup {
			problems = append(problems, fmt.Sprintf("line %d: row `%s` repeats the row of line %d: merge them", r.line, r.pkg, l))
		}
		seen[r.pkg] = r.line
	}
	covered := map[string][]string{}           // row -> its packages
	actual := map[string]map[string][]string{} // row -> import -> importers
	for _, pkg := range sortedKeys(pkgs) {
		r, ok := owner(rows, pkg)
		if !ok {
			problems = append(problems, fmt.Sprintf("package %s has no row: add a row `%s` (or a row `parent/...` that covers it) with its imports", pkg, pkg))
			continue
		}
		covered[r.pkg] = append(covered[r.pkg], pkg)
		for _, imp := range pkgs[pkg] {
			if o, ok := owner(rows, imp); ok && o.pkg == r.pkg {
				continue // between packages of one row
			}
			if actual[r.pkg] == nil {
				actual[r.pkg] = map[string][]string{}
			}
			actual[r.pkg][imp] = append(actual[r.pkg][imp], pkg)
		}
	}
	for _, r := range rows {
		if len(covered[r.pkg]) == 0 {
			problems = append(problems, fmt.Sprintf("line %d: row `%s` covers no package: remove it, or fix its name", r.line, r.pkg))
			continue
		}
		imps := actual[r.pkg]
		for _, imp := range sortedKeys(imps) {
			if !slices.ContainsFunc(r.imports, func(p string) bool { return matches(p, imp) }) {
				problems = append(problems, fmt.Sprintf("line %d: row `%s` misses `%s` (imported by %s): add it to its imports", r.line, r.pkg, imp, strings.Join(imps[imp], ", ")))
			}
		}
		for _, p := range r.imports {
			used := false
			for imp := range imps {
				if matches(p, imp) {
					used = true
					break
				}
			}
			if !used {
				problems = append(problems, fmt.Sprintf("line %d: row `%s` lists `%s`, which none of its packages (%s) imports: remove it", r.line, r.pkg, p, strings.Join(covered[r.pkg], ", ")))
			}
		}
	}
	return problems
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// repoRoot is the root module's directory.
func repoRoot(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatalf("go env GOMOD: %v", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		t.Fatal("go env GOMOD: not inside a module")
	}
	return filepath.Dir(gomod)
}

// repoImports lists every package of the repository, the nested modules'
// included, by path relative to the root module, with the packages of the
// repository that its non-test files import.
func repoImports(t *testing.T, root string) map[string][]string {
	t.Helper()
	dirs := []string{root}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() && p != root && (name == "testdata" || name == "vendor" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
			return filepath.SkipDir
		}
		if !d.IsDir() && name == "go.mod" && filepath.Dir(p) != root {
			dirs = append(dirs, filepath.Dir(p))
		}
		return nil
	})
	if err != nil {
		t.Fatalf("looking for nested modules: %v", err)
	}
	pkgs := map[string][]string{}
	for _, dir := range dirs {
		cmd := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, "./...")
		cmd.Dir = dir
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go list ./... in %s: %v\n%s", dir, err, stderr.String())
		}
		sc := bufio.NewScanner(bytes.NewReader(out))
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			if len(f) == 0 {
				continue
			}
			pkg, ok := strings.CutPrefix(f[0], module+"/")
			if !ok {
				t.Fatalf("go list in %s: package %s is outside %s", dir, f[0], module)
			}
			var own []string
			for _, imp := range f[1:] {
				if rel, ok := strings.CutPrefix(imp, module+"/"); ok {
					own = append(own, rel)
				}
			}
			pkgs[pkg] = own
		}
	}
	return pkgs
}

// ARCHITECTURE.md's package table says what each package imports of ours.
func TestArchitectureTable(t *testing.T) {
	root := repoRoot(t)
	text, err := os.ReadFile(filepath.Join(root, "ARCHITECTURE.md"))
	if err != nil {
		t.Fatal(err)
	}
	rows, err := parseTable(string(text))
	if err != nil {
		t.Fatalf("ARCHITECTURE.md's package table: %v", err)
	}
	pkgs := repoImports(t, root)
	if len(pkgs) < 20 {
		t.Fatalf("go list found %d packages; the repository has more", len(pkgs))
	}
	for _, nested := range []string{"crcache", "examples/controller-runtime"} {
		if _, ok := pkgs[nested]; !ok {
			t.Errorf("go list did not find the nested module's package %s", nested)
		}
	}
	for _, p := range checkTable(rows, pkgs) {
		t.Errorf("ARCHITECTURE.md, package table, %s", p)
	}
}

// The table's parser and check catch what they are for.
func TestArchitectureTableCatchesDrift(t *testing.T) {
	const doc = "# A\n\n## Packages\n\n" +
		"| package | owns | imports (of ours) |\n" +
		"|---|---|---|\n" +
		"| `a` | the a, with a `x|y` flag | `b` (its errors), `c/...` |\n" +
		"| `b` (own module) | the b | none |\n" +
		"| `c/...` | the c's | `a` |\n" +
		"| `d` | gone | none |\n" +
		"\n## Next\n\n| x | imports (of ours) |\n|---|---|\n| `e` | none |\n"
	rows, err := parseTable(doc)
	if err != nil {
		t.Fatal(err)
	}
	want := []tableRow{
		{line: 7, pkg: "a", imports: []string{"b", "c/..."}},
		{line: 8, pkg: "b"},
		{line: 9, pkg: "c/..."},
		{line: 10, pkg: "d"},
	}
	want[2].imports = []string{"a"}
	if len(rows) != len(want) {
		t.Fatalf("parsed %d rows, want %d: %+v", len(rows), len(want), rows)
	}
	for i := range want {
		if rows[i].line != want[i].line || rows[i].pkg != want[i].pkg || !slices.Equal(rows[i].imports, want[i].imports) {
			t.Errorf("row %d: got %+v, want %+v", i, rows[i], want[i])
		}
	}

	// The table as it stands: c/x and c/y/z are covered by c/...; c/x's
	// import of c/y/z is inside its row.
	truth := map[string][]string{
		"a":     {"b", "c/x"},
		"b":     nil,
		"c":     {"a"},
		"c/x":   {"c/y/z"},
		"c/y/z": nil,
		"d":     nil,
	}
	if p := checkTable(rows, truth); len(p) != 0 {
		t.Errorf("a true table: problems %q", p)
	}

	// Drift: a imports e (a package without a row) and no longer c/...; b
	// imports a; d is gone.
	drift := map[string][]string{
		"a":     {"b", "e"},
		"b":     {"a"},
		"c":     {"a"},
		"c/y/z": nil,
		"e":     nil,
	}
	got := checkTable(rows, drift)
	for _, w := range []string{
		"package e has no row",
		"row `a` misses `e` (imported by a)",
		"row `a` lists `c/...`, which none of its packages (a) imports",
		"row `b` misses `a` (imported by b)",
		"row `d` covers no package",
	} {
		if !slices.ContainsFunc(got, func(p string) bool { return strings.Contains(p, w) }) {
			t.Errorf("the check does not report %q; it reports %q", w, got)
		}
	}
	if len(got) != 5 {
		t.Errorf("the check reports %d problems, want 5: %q", len(got), got)
	}

	for _, bad := range []string{
		"## Packages\n\n| package | imports (of ours) |\n|---|---|\n| `a` | b, `c` |\n",
		"## Packages\n\n| package | imports (of ours) |\n|---|---|\n| `a` | |\n",
		"## Packages\n\n| package | imports (of ours) |\n|---|---|\n| a | none |\n",
		"## Packages\n\n| package | imports (of ours) |\n|---|---|\n| `a` | `b` (open |\n",
		"## Packages\n\n| package | owns |\n|---|---|\n| `a` | none |\n",
	} {
		if _, err := parseTable(bad); err == nil {
			t.Errorf("parseTable accepts %q", bad)
		}
	}
}
