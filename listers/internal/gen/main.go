// Command gen writes warmcache's typed listers: one for every lister that
// client-go generates (k8s.io/client-go/listers/<group>/<version>),
// returning client-go's own lister interface, built on package listers so
// that List reads only the objects its selector selects.
//
// It reads client-go's lister sources (the version go.mod requires) and
// writes listers/<group>/<version>/. Run it with go generate ./listers; a
// test checks that the checked-in files are what it writes.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"go/ast"
	"go/format"
	"go/parser"
	"go/printer"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
)

// clientGoListers is the import path of client-go's listers.
const clientGoListers = "k8s.io/client-go/listers"

func main() {
	out := flag.String("out", ".", "directory to write the group/version packages into (the listers package)")
	flag.Parse()
	if err := run(*out); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

func run(out string) error {
	root, err := clientGoDir()
	if err != nil {
		return err
	}
	gvs, err := scan(filepath.Join(root, "listers"))
	if err != nil {
		return err
	}
	if len(gvs) == 0 {
		return fmt.Errorf("no listers found under %s", root)
	}
	for _, gv := range gvs {
		if err := write(out, gv); err != nil {
			return err
		}
	}
	return nil
}

// clientGoDir returns the directory of the client-go module the build uses.
func clientGoDir() (string, error) {
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "k8s.io/client-go")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	b, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go list -m k8s.io/client-go: %w: %s", err, stderr.String())
	}
	dir := strings.TrimSpace(string(b))
	if dir == "" {
		return "", fmt.Errorf("k8s.io/client-go is not downloaded (go mod download)")
	}
	return dir, nil
}

// groupVersion is one client-go lister package.
type groupVersion struct {
	rel     string // group/version, relative to the listers
	pkg     string // package name
	listers []lister
}

// lister is one generated lister of client-go.
type lister struct {
	kind       string // ReplicaSet
	elem       string // *appsv1.ReplicaSet, as client-go writes it
	resource   string // appsv1.Resource("replicaset")
	apiAlias   string // appsv1
	apiPath    string // k8s.io/api/apps/v1
	plural     string // ReplicaSets, "" for cluster-scoped resources
	expansion  bool   // the lister's expansion interface has methods
	sourceFile string
}

// scan reads every group/version package under dir.
func scan(dir string) ([]groupVersion, error) {
	var gvs []groupVersion
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		gv, ok, err := scanPackage(dir, path)
		if ok {
			gvs = append(gvs, gv)
		}
		return err
	})
	sort.Slice(gvs, func(i, j int) bool { return gvs[i].rel < gvs[j].rel })
	return gvs, err
}

func scanPackage(root, dir string) (groupVersion, bool, error) {
	fset := token.NewFileSet()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return groupVersion{}, false, err
	}
	parsed := map[string]*ast.File{}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		af, err := parser.ParseFile(fset, f, nil, parser.SkipObjectResolution)
		if err != nil {
			return groupVersion{}, false, err
		}
		parsed[f] = af
	}
	nonEmpty := map[string]bool{} // expansion interfaces with methods
	for _, af := range parsed {
		for name, it := range interfaces(af) {
			if strings.HasSuffix(name, "Expansion") && len(it.Methods.List) > 0 {
				nonEmpty[name] = true
			}
		}
	}
	rel, err := filepath.Rel(root, dir)
	if err != nil {
		return groupVersion{}, false, err
	}
	gv := groupVersion{rel: filepath.ToSlash(rel)}
	var names []string
	for f := range parsed {
		names = append(names, f)
	}
	sort.Strings(names)
	for _, f := range names {
		af := parsed[f]
		l, ok, err := listerOf(fset, af)
		if err != nil {
			return groupVersion{}, false, fmt.Errorf("%s: %w", f, err)
		}
		if !ok {
			continue
		}
		l.expansion = nonEmpty[l.kind+"ListerExpansion"]
		if nonEmpty[l.kind+"NamespaceListerExpansion"] {
			return groupVersion{}, false, fmt.Errorf("%s: %sNamespaceListerExpansion has methods; the generator does not delegate those", f, l.kind)
		}
		l.sourceFile = filepath.Base(f)
		gv.pkg = af.Name.Name
		gv.listers = append(gv.listers, l)
	}
	return gv, len(gv.listers) > 0, nil
}

func interfaces(af *ast.File) map[string]*ast.InterfaceType {
	out := map[string]*ast.InterfaceType{}
	for _, d := range af.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.TYPE {
			continue
		}
		for _, s := range g.Specs {
			ts := s.(*ast.TypeSpec)
			if it, ok := ts.Type.(*ast.InterfaceType); ok {
				out[ts.Name.Name] = it
			}
		}
	}
	return out
}

// listerOf finds the lister a client-go file declares: its interface
// XLister and the constructor NewXLister returning
// &xLister{listers.New[ELEM](indexer, RESOURCE)}.
func listerOf(fset *token.FileSet, af *ast.File) (lister, bool, error) {
	var l lister
	for _, d := range af.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || fd.Recv != nil || !strings.HasPrefix(fd.Name.Name, "New") || !strings.HasSuffix(fd.Name.Name, "Lister") {
			continue
		}
		kind := strings.TrimSuffix(strings.TrimPrefix(fd.Name.Name, "New"), "Lister")
		call := findCall(fd.Body, "New")
		if call == nil || len(call.Args) != 2 {
			return l, false, fmt.Errorf("%s: constructor is not listers.New[T](indexer, resource)", fd.Name.Name)
		}
		elem, ok := typeArg(call.Fun)
		if !ok {
			return l, false, fmt.Errorf("%s: no type argument", fd.Name.Name)
		}
		l = lister{kind: kind, elem: nodeString(fset, elem), resource: nodeString(fset, call.Args[1])}
		star, ok := elem.(*ast.StarExpr)
		if !ok {
			return l, false, fmt.Errorf("%s: element %s is not a pointer", kind, l.elem)
		}
		sel, ok := star.X.(*ast.SelectorExpr)
		if !ok {
			return l, false, fmt.Errorf("%s: element %s is not a qualified type", kind, l.elem)
		}
		l.apiAlias = sel.X.(*ast.Ident).Name
		for _, imp := range af.Imports {
			path := strings.Trim(imp.Path.Value, `"`)
			if (imp.Name != nil && imp.Name.Name == l.apiAlias) || (imp.Name == nil && filepath.Base(path) == l.apiAlias) {
				l.apiPath = path
			}
		}
		if l.apiPath == "" {
			return l, false, fmt.Errorf("%s: no import for %s", kind, l.apiAlias)
		}
	}
	if l.kind == "" {
		return l, false, nil
	}
	it := interfaces(af)[l.kind+"Lister"]
	if it == nil {
		return l, false, fmt.Errorf("no interface %sLister", l.kind)
	}
	for _, m := range it.Methods.List {
		ft, ok := m.Type.(*ast.FuncType)
		if len(m.Names) != 1 || !ok || ft.Results == nil || len(ft.Results.List) != 1 {
			continue
		}
		if id, ok := ft.Results.List[0].Type.(*ast.Ident); ok && id.Name == l.kind+"NamespaceLister" {
			l.plural = m.Names[0].Name
		}
	}
	return l, true, nil
}

// findCall returns the first call in n of a function selected as X.name or
// X.name[T].
func findCall(n ast.Node, name string) *ast.CallExpr {
	var found *ast.CallExpr
	ast.Inspect(n, func(n ast.Node) bool {
		if found != nil {
			return false
		}
		if c, ok := n.(*ast.CallExpr); ok {
			fun := c.Fun
			if ix, ok := fun.(*ast.IndexExpr); ok {
				fun = ix.X
			}
			if s, ok := fun.(*ast.SelectorExpr); ok && s.Sel.Name == name {
				found = c
				return false
			}
		}
		return true
	})
	return found
}

func typeArg(fun ast.Expr) (ast.Expr, bool) {
	ix, ok := fun.(*ast.IndexExpr)
	if !ok {
		return nil, false
	}
	return ix.Index, true
}

func nodeString(fset *token.FileSet, n ast.Node) string {
	var b bytes.Buffer
	_ = printer.Fprint(&b, fset, n)
	return b.String()
}

// write writes the package of gv under out.
func write(out string, gv groupVersion) error {
	dir := filepath.Join(out, filepath.FromSlash(gv.rel))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	docSrc := fmt.Sprintf(`%s

// Package %s has warmcache's listers of %s/%s: each New*Lister returns
// client-go's own lister interface of that package, so switching is an
// import change, and its List reads only the objects its selector selects
// when the indexer is a warmcache store (see package listers).
package %s
`, header(gv.rel), gv.pkg, clientGoListers, gv.rel, gv.pkg)
	if err := writeGo(filepath.Join(dir, "doc.go"), docSrc); err != nil {
		return err
	}
	for _, l := range gv.listers {
		if err := writeGo(filepath.Join(dir, strings.TrimSuffix(l.sourceFile, ".go")+".go"), listerSource(gv, l)); err != nil {
			return err
		}
	}
	return nil
}

func header(rel string) string {
	return fmt.Sprintf("// Code generated by listers/internal/gen from %s/%s. DO NOT EDIT.", clientGoListers, rel)
}

func writeGo(path, src string) error {
	b, err := format.Source([]byte(src))
	if err != nil {
		return fmt.Errorf("%s: %w\n%s", path, err, src)
	}
	return os.WriteFile(path, b, 0o644)
}

func listerSource(gv groupVersion, l lister) string {
	lower := strings.ToLower(l.kind[:1]) + l.kind[1:]
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n\npackage %s\n\nimport (\n", header(gv.rel), gv.pkg)
	fmt.Fprintf(&b, "\t%s %q\n\tclientlisters %q\n\t\"k8s.io/client-go/tools/cache\"\n\n\t\"github.com/warmcache/warmcache/listers\"\n)\n\n", l.apiAlias, l.apiPath, clientGoListers+"/"+gv.rel)
	fmt.Fprintf(&b, "// New%[1]sLister returns client-go's %[1]sLister over indexer. Its List\n", l.kind)
	b.WriteString("// methods read only the objects their selector selects from a warmcache\n// store (listers.ResourceIndexer)")
	if l.expansion {
		fmt.Fprintf(&b, "; the methods of %sListerExpansion are\n// client-go's own, over the same indexer", l.kind)
	}
	b.WriteString(".\n")
	fmt.Fprintf(&b, "func New%[1]sLister(indexer cache.Indexer) clientlisters.%[1]sLister {\n", l.kind)
	fmt.Fprintf(&b, "\treturn &%sLister{\n\t\tResourceIndexer: listers.New[%s](indexer, %s),\n", lower, l.elem, l.resource)
	if l.expansion {
		fmt.Fprintf(&b, "\t\t%[1]sListerExpansion: clientlisters.New%[1]sLister(indexer),\n", l.kind)
	}
	b.WriteString("\t}\n}\n\n")
	fmt.Fprintf(&b, "type %sLister struct {\n\tlisters.ResourceIndexer[%s]\n", lower, l.elem)
	if l.expansion {
		fmt.Fprintf(&b, "\tclientlisters.%sListerExpansion\n", l.kind)
	}
	b.WriteString("}\n")
	if l.plural == "" {
		return b.String()
	}
	fmt.Fprintf(&b, `
// %[3]s returns the lister of the %[3]s in namespace.
func (s *%[1]sLister) %[3]s(namespace string) clientlisters.%[2]sNamespaceLister {
	return %[1]sNamespaceLister{listers.NewNamespaced(s.ResourceIndexer, namespace)}
}

type %[1]sNamespaceLister struct {
	listers.ResourceIndexer[%[4]s]
}
`, lower, l.kind, l.plural, l.elem)
	return b.String()
}
