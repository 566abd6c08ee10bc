package main

import (
	"bytes"
	"fmt"
	"path"
	"reflect"
	"slices"
	"strings"
)

const (
	clientGoInformers = "k8s.io/client-go/informers/"
	clientGoListers   = "k8s.io/client-go/listers/"
	ourListers        = "github.com/warmcache/warmcache/listers/"
)

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

// accessors writes g's group, version and typed informer accessors.
func (g group) accessors(b *bytes.Buffer) {
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
			fmt.Fprintf(b, `
// %[1]s returns client-go's %[2]s, whose Lister is warmcache's %[5]s.
func (v %[3]s) %[1]s() %[4]sinformers.%[2]s { return withLister(v.v.%[1]s(), %[6]slisters.New%[5]s) }
`, t.method, t.informer, vtype, alias(v.rel), t.lister, alias(t.listerRel))
		}
	}
}
