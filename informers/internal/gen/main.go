// Command gen writes package informers' code of each API group, one file
// per group (generated_<group>.go):
//
//   - the group, version and typed informer accessors, implementing
//     client-go's generated interfaces (core.Interface, v1.Interface,
//     v1.PodInformer, ...) around client-go's own, so that every typed
//     informer comes through the Factory's InformerFor as before, and every
//     typed Lister() returns warmcache's lister of the same interface
//     (package listers/<group>/<version>), which selects in the store;
//   - the table of the group's typed clients of kubernetes.Interface
//     (client.CoreV1().Pods(namespace) ...) by the type of their list, each
//     reached by plain calls, so that package informers looks no method up
//     by name at run time (which would make the linker keep every exported
//     method of every type it reaches).
//
// generated_clients.go lists the groups' tables.
//
// It reads client-go's SharedInformerFactory and kubernetes.Interface by
// reflection, for the client-go version go.mod requires. Run it with go
// generate ./informers; a test checks that the checked-in files are what
// it writes.
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"go/format"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
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
	clients := scanClients(reflect.TypeFor[kubernetes.Interface]())
	if len(clients) == 0 {
		return fmt.Errorf("no typed clients found on %s", reflect.TypeFor[kubernetes.Interface]())
	}
	groups = withClients(groups, clients)
	for _, g := range groups {
		if err := writeGo(filepath.Join(out, "generated_"+g.pkg+".go"), g.source()); err != nil {
			return err
		}
	}
	return writeGo(filepath.Join(out, "generated_clients.go"), tablesSource(groups))
}

// withClients files each typed client under the group of its API package
// (k8s.io/api/apps/v1: apps), adding a group without informers for one
// client-go's factory has none of, and returns the groups by package name.
func withClients(groups []group, clients []client) []group {
	slices.SortFunc(clients, func(x, y client) int {
		return strings.Compare(x.group+"."+x.resource, y.group+"."+y.resource)
	})
	for _, c := range clients {
		pkg := path.Base(path.Dir(c.listPath))
		i := slices.IndexFunc(groups, func(g group) bool { return g.pkg == pkg })
		if i < 0 {
			groups = append(groups, group{pkg: pkg})
			i = len(groups) - 1
		}
		groups[i].clients = append(groups[i].clients, c)
	}
	slices.SortFunc(groups, func(a, b group) int { return strings.Compare(a.pkg, b.pkg) })
	return groups
}

// client is one typed client of kubernetes.Interface.
type client struct {
	group, resource string // CoreV1, Pods
	namespaced      bool
	listPath        string // k8s.io/api/core/v1
	listName        string // PodList
}

// scanClients walks kubernetes.Interface's method set: every group version
// accessor (CoreV1, AppsV1, ...) and on it every method returning a
// resource client with List(ctx, ListOptions) (*XList, error) and Watch.
func scanClients(ci reflect.Type) []client {
	ctxType := reflect.TypeFor[context.Context]()
	optsType := reflect.TypeFor[metav1.ListOptions]()
	errType := reflect.TypeFor[error]()
	var out []client
	for i := range ci.NumMethod() {
		g := ci.Method(i)
		if g.Type.NumIn() != 0 || g.Type.NumOut() != 1 || g.Type.Out(0).Kind() != reflect.Interface {
			continue
		}
		gt := g.Type.Out(0)
		for j := range gt.NumMethod() {
			r := gt.Method(j)
			namespaced := r.Type.NumIn() == 1 && r.Type.In(0).Kind() == reflect.String
			if (r.Type.NumIn() != 0 && !namespaced) || r.Type.NumOut() != 1 || r.Type.Out(0).Kind() != reflect.Interface {
				continue
			}
			list, ok := r.Type.Out(0).MethodByName("List")
			if !ok || list.Type.NumIn() != 2 || list.Type.In(0) != ctxType || list.Type.In(1) != optsType ||
				list.Type.NumOut() != 2 || list.Type.Out(1) != errType || list.Type.Out(0).Kind() != reflect.Pointer {
				continue
			}
			if _, ok := r.Type.Out(0).MethodByName("Watch"); !ok {
				continue
			}
			lt := list.Type.Out(0).Elem()
			out = append(out, client{group: g.Name, resource: r.Name, namespaced: namespaced, listPath: lt.PkgPath(), listName: lt.Name()})
		}
	}
	return out
}

// apiAlias returns the import alias of an API package: k8s.io/api/core/v1
// -> apicorev1.
func apiAlias(path string) string {
	return "api" + strings.NewReplacer("/", "", ".", "", "-", "").Replace(strings.TrimPrefix(path, "k8s.io/api/"))
}

// tablesVar is the name of the table of g's typed clients.
func (g group) tablesVar() string { return g.pkg + "TypedClients" }

// tablesSource lists the groups' tables of typed clients.
func tablesSource(groups []group) string {
	var b bytes.Buffer
	b.WriteString("// Code generated by informers/internal/gen from k8s.io/client-go/kubernetes. DO NOT EDIT.\n\npackage informers\n\n")
	b.WriteString("import \"reflect\"\n\n")
	b.WriteString("// typedClientsByGroup is every typed client of kubernetes.Interface: the\n// table of each API group (generated_<group>.go), by the pointer type of\n// its list.\nvar typedClientsByGroup = []map[reflect.Type]typedClient{\n")
	for _, g := range groups {
		if len(g.clients) > 0 {
			fmt.Fprintf(&b, "\t%s,\n", g.tablesVar())
		}
	}
	b.WriteString("}\n")
	return b.String()
}

// clientsPart writes the table of g's typed clients.
func (g group) clientsPart(b *bytes.Buffer) {
	fmt.Fprintf(b, "\n// %s is every typed client of kubernetes.Interface of the %s API\n// group, by the pointer type of its list.\nvar %[1]s = map[reflect.Type]typedClient{\n", g.tablesVar(), g.pkg)
	for _, c := range g.clients {
		ns := ""
		if c.namespaced {
			ns = "namespace"
		}
		fmt.Fprintf(b, `	reflect.TypeFor[*%[1]s.%[2]s](): {group: %[3]q, resource: %[4]q, namespaced: %[5]t,
		open: func(c kubernetes.Interface, namespace string) (listFunc, watchFunc, error) {
			g := c.%[3]s()
			if g == nil {
				return nil, nil, noTypedClient(c, "%[3]s()")
			}
			r := g.%[4]s(%[6]s)
			if r == nil {
				return nil, nil, noTypedClient(c, "%[3]s().%[4]s()")
			}
			return typedListWatch(r.List, r.Watch)
		}},
`, apiAlias(c.listPath), c.listName, c.group, c.resource, c.namespaced, ns)
	}
	b.WriteString("}\n")
}

// group is one API group: the group accessor of the factory (Core()
// core.Interface), if it has one, and the group's typed clients.
type group struct {
	method   string // Core; "" for a group with typed clients only
	pkg      string // core: the last element of its package path
	path     string // k8s.io/client-go/informers/core
	versions []version
	clients  []client
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
	var from []string
	if g.method != "" {
		from = append(from, clientGoInformers+g.pkg)
	}
	if len(g.clients) > 0 {
		from = append(from, "k8s.io/client-go/kubernetes")
	}
	fmt.Fprintf(&b, "// Code generated by informers/internal/gen from %s. DO NOT EDIT.\n\npackage informers\n\nimport (\n", strings.Join(from, " and "))
	var clientImports, ourImports []string
	if len(g.clients) > 0 {
		b.WriteString("\t\"reflect\"\n\n")
		clientImports = append(clientImports, `"k8s.io/client-go/kubernetes"`)
		seen := map[string]bool{}
		for _, c := range g.clients {
			if !seen[c.listPath] {
				seen[c.listPath] = true
				clientImports = append(clientImports, fmt.Sprintf("%s %q", apiAlias(c.listPath), c.listPath))
			}
		}
	}
	if g.method != "" {
		clientImports = append(clientImports, fmt.Sprintf("%sinformers %q", g.pkg, g.path))
	}
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
	slices.Sort(clientImports) // format.Source sorts them by path
	slices.Sort(ourImports)
	for _, imp := range clientImports {
		fmt.Fprintf(&b, "\t%s\n", imp)
	}
	if len(ourImports) > 0 {
		b.WriteString("\n")
	}
	for _, imp := range ourImports {
		fmt.Fprintf(&b, "\t%s\n", imp)
	}
	b.WriteString(")\n")
	if g.method != "" {
		g.informersPart(&b)
	}
	if len(g.clients) > 0 {
		g.clientsPart(&b)
	}
	return b.String()
}

// informersPart writes g's group, version and typed informer accessors.
func (g group) informersPart(b *bytes.Buffer) {
	gtype := g.pkg + "Group"
	fmt.Fprintf(b, `
// %[1]s returns the informers of the %[2]s API group: client-go's, each
// typed Lister() returning warmcache's lister of the same interface.
func (f *Factory) %[1]s() %[2]sinformers.Interface {
	return %[3]s{%[2]sinformers.New(f, f.namespace, f.tweak)}
}

// %[3]s is client-go's %[2]s group whose versions' listers select in the store.
type %[3]s struct{ g %[2]sinformers.Interface }
`, g.method, g.pkg, gtype)
	for _, v := range g.versions {
		vtype := g.pkg + v.method
		fmt.Fprintf(b, `
// %[1]s returns the informers of %[2]s.
func (g %[3]s) %[1]s() %[4]sinformers.Interface { return %[5]s{g.g.%[1]s()} }

// %[5]s is client-go's %[2]s whose typed informers' listers select in the store.
type %[5]s struct{ v %[4]sinformers.Interface }
`, v.method, v.rel, gtype, alias(v.rel), vtype)
		for _, t := range v.typed {
			ttype := vtype + t.method
			fmt.Fprintf(b, `
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
}

func writeGo(path, src string) error {
	b, err := format.Source([]byte(src))
	if err != nil {
		return fmt.Errorf("%s: %w\n%s", path, err, src)
	}
	return os.WriteFile(path, b, 0o644)
}
