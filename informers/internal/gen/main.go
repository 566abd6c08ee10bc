// Command gen writes the group, version and typed informer accessors of
// package informers: one file per API group (generated_<group>.go), each
// implementing client-go's generated interfaces (core.Interface,
// v1.Interface, v1.PodInformer, ...) around client-go's own, so that every
// typed informer comes through the Factory's InformerFor as before, and
// every typed Lister() returns warmcache's lister of the same interface
// (package listers/<group>/<version>), which selects in the store.
//
// It reads client-go's SharedInformerFactory interface by reflection, for
// the client-go version go.mod requires. Run it with go generate
// ./informers; a test checks that the checked-in files are what it writes.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"go/format"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"slices"
	"strings"

	clientinformers "k8s.io/client-go/informers"
)

const (
	clientGoInformers = "k8s.io/client-go/informers/"
	clientGoListers   = "k8s.io/client-go/listers/"
	ourListers        = "github.com/warmcache/warmcache/listers/"
)

func main() {
	out := flag.String("out", ".", "directory to write the files into (package informers)")
	flag.Parse()
	if err := run(*out); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

func run(out string) error {
	groups, err := scan(reflect.TypeFor[clientinformers.SharedInformerFactory]())
	if err != nil {
		return err
	}
	if len(groups) == 0 {
		return fmt.Errorf("no group accessors found on %s", reflect.TypeFor[clientinformers.SharedInformerFactory]())
	}
	for _, g := range groups {
		if err := writeGo(filepath.Join(out, "generated_"+g.pkg+".go"), g.source()); err != nil {
			return err
		}
	}
	return nil
}

// group is one group accessor of the factory (Core() core.Interface).
type group struct {
	method   string // Core
	pkg      string // core: the last element of its package path
	path     string // k8s.io/client-go/informers/core
	versions []version
}

// version is one version accessor of a group (V1() v1.Interface).
type version struct {
	method string // V1
	path   string // k8s.io/client-go/informers/core/v1
	rel    string // core/v1
	typed  []typed
}

// typed is one typed informer accessor of a version (Pods() PodInformer).
type typed struct {
	method    string // Pods
	informer  string // PodInformer
	lister    string // PodLister
	listerRel string // core/v1: the lister package under client-go's listers
}

// scan walks the factory's interface: every method without arguments that
// returns the Interface of a package under client-go's informers is a group
// accessor; every method of that returning a package's Interface is a
// version accessor; every method of that returning an interface with
// Informer() and Lister() is a typed informer accessor.
func scan(factory reflect.Type) ([]group, error) {
	var groups []group
	for i := range factory.NumMethod() {
		m := factory.Method(i)
		gt, ok := accessor(m, "Interface")
		if !ok {
			continue
		}
		g := group{method: m.Name, path: gt.PkgPath(), pkg: path.Base(gt.PkgPath())}
		for j := range gt.NumMethod() {
			vm := gt.Method(j)
			vt, ok := accessor(vm, "Interface")
			if !ok {
				return nil, fmt.Errorf("%s.%s: not a version accessor", gt, vm.Name)
			}
			v := version{method: vm.Name, path: vt.PkgPath(), rel: strings.TrimPrefix(vt.PkgPath(), clientGoInformers)}
			for k := range vt.NumMethod() {
				t, err := typedOf(vt, vt.Method(k))
				if err != nil {
					return nil, err
				}
				v.typed = append(v.typed, t)
			}
			g.versions = append(g.versions, v)
		}
		groups = append(groups, g)
	}
	slices.SortFunc(groups, func(a, b group) int { return strings.Compare(a.pkg, b.pkg) })
	return groups, nil
}

// accessor returns the result type of m if m takes no argument and returns
// one interface named name of a package under client-go's informers.
func accessor(m reflect.Method, name string) (reflect.Type, bool) {
	if m.Type.NumIn() != 0 || m.Type.NumOut() != 1 {
		return nil, false
	}
	t := m.Type.Out(0)
	if t.Kind() != reflect.Interface || t.Name() != name || !strings.HasPrefix(t.PkgPath(), clientGoInformers) {
		return nil, false
	}
	return t, true
}

// typedOf describes the typed informer accessor m of version interface vt.
func typedOf(vt reflect.Type, m reflect.Method) (typed, error) {
	if m.Type.NumIn() != 0 || m.Type.NumOut() != 1 || m.Type.Out(0).Kind() != reflect.Interface {
		return typed{}, fmt.Errorf("%s.%s: not a typed informer accessor", vt, m.Name)
	}
	it := m.Type.Out(0)
	if it.PkgPath() != vt.PkgPath() {
		return typed{}, fmt.Errorf("%s.%s returns %s of another package", vt, m.Name, it)
	}
	lm, ok := it.MethodByName("Lister")
	if !ok || lm.Type.NumIn() != 0 || lm.Type.NumOut() != 1 {
		return typed{}, fmt.Errorf("%s has no Lister()", it)
	}
	if _, ok := it.MethodByName("Informer"); !ok {
		return typed{}, fmt.Errorf("%s has no Informer()", it)
	}
	lt := lm.Type.Out(0)
	if !strings.HasPrefix(lt.PkgPath(), clientGoListers) {
		return typed{}, fmt.Errorf("%s.Lister returns %s, not one of client-go's listers", it, lt)
	}
	return typed{method: m.Name, informer: it.Name(), lister: lt.Name(), listerRel: strings.TrimPrefix(lt.PkgPath(), clientGoListers)}, nil
}

// alias returns the import alias of a group/version path: core/v1 -> corev1.
func alias(rel string) string { return strings.ReplaceAll(rel, "/", "") }

// exported and unexported names of the generated types.
func lowerFirst(s string) string { return strings.ToLower(s[:1]) + s[1:] }

func (g group) source() string {
	var b bytes.Buffer
	fmt.Fprintf(&b, "// Code generated by informers/internal/gen from %s%s. DO NOT EDIT.\n\npackage informers\n\nimport (\n", clientGoInformers, g.pkg)
	var clientImports, ourImports []string
	clientImports = append(clientImports, fmt.Sprintf("%sinformers %q", g.pkg, g.path))
	seen := map[string]bool{}
	for _, v := range g.versions {
		clientImports = append(clientImports, fmt.Sprintf("%sinformers %q", alias(v.rel), v.path))
		for _, t := range v.typed {
			if seen[t.listerRel] {
				continue
			}
			seen[t.listerRel] = true
			clientImports = append(clientImports, fmt.Sprintf("%sclientlisters %q", alias(t.listerRel), clientGoListers+t.listerRel))
			ourImports = append(ourImports, fmt.Sprintf("%slisters %q", alias(t.listerRel), ourListers+t.listerRel))
		}
	}
	slices.Sort(clientImports)
	slices.Sort(ourImports)
	for _, imp := range clientImports {
		fmt.Fprintf(&b, "\t%s\n", imp)
	}
	b.WriteString("\n")
	for _, imp := range ourImports {
		fmt.Fprintf(&b, "\t%s\n", imp)
	}
	b.WriteString(")\n\n")

	gtype := g.pkg + "Group"
	fmt.Fprintf(&b, `// %[1]s returns the informers of the %[2]s API group: client-go's, each
// typed Lister() returning warmcache's lister of the same interface.
func (f *Factory) %[1]s() %[2]sinformers.Interface {
	return %[3]s{%[2]sinformers.New(f, f.namespace, f.tweak)}
}

// %[3]s is client-go's %[2]s group whose versions' listers select in the store.
type %[3]s struct{ g %[2]sinformers.Interface }
`, g.method, g.pkg, gtype)
	for _, v := range g.versions {
		vtype := g.pkg + v.method
		fmt.Fprintf(&b, `
// %[1]s returns the informers of %[2]s.
func (g %[3]s) %[1]s() %[4]sinformers.Interface { return %[5]s{g.g.%[1]s()} }

// %[5]s is client-go's %[2]s whose typed informers' listers select in the store.
type %[5]s struct{ v %[4]sinformers.Interface }
`, v.method, v.rel, gtype, alias(v.rel), vtype)
		for _, t := range v.typed {
			ttype := vtype + t.method
			fmt.Fprintf(&b, `
// %[1]s returns client-go's %[2]s, whose Lister selects in the store.
func (v %[3]s) %[1]s() %[4]sinformers.%[2]s { return %[5]s{v.v.%[1]s()} }

// %[5]s is client-go's %[2]s with warmcache's lister.
type %[5]s struct{ %[4]sinformers.%[2]s }

// Lister returns warmcache's %[6]s over the informer's store: its List
// methods hand the namespace and the label selector to the store, which
// decodes only the objects they select.
func (i %[5]s) Lister() %[7]sclientlisters.%[6]s {
	return %[7]slisters.New%[6]s(i.Informer().GetIndexer())
}
`, t.method, t.informer, vtype, alias(v.rel), lowerFirst(ttype), t.lister, alias(t.listerRel))
		}
	}
	return b.String()
}

func writeGo(path, src string) error {
	b, err := format.Source([]byte(src))
	if err != nil {
		return fmt.Errorf("%s: %w\n%s", path, err, src)
	}
	return os.WriteFile(path, b, 0o644)
}
