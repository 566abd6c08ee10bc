package main

import (
	"bytes"
	"context"
	"fmt"
	"path"
	"reflect"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

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
// It returns them by group and resource, or an error if two list the same
// type (the table is by the type of the list).
func scanClients(ci reflect.Type) ([]client, error) {
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
	slices.SortFunc(out, func(x, y client) int {
		return strings.Compare(x.group+"."+x.resource, y.group+"."+y.resource)
	})
	byList := map[string]client{}
	for _, c := range out {
		key := c.listPath + "." + c.listName
		if prev, ok := byList[key]; ok {
			return nil, fmt.Errorf("%s.%s and %s.%s both list %s", prev.group, prev.resource, c.group, c.resource, key)
		}
		byList[key] = c
	}
	return out, nil
}

// apiAlias returns the import alias of an API package: k8s.io/api/core/v1
// -> apicorev1.
func apiAlias(path string) string {
	return "api" + strings.NewReplacer("/", "", ".", "", "-", "").Replace(strings.TrimPrefix(path, "k8s.io/api/"))
}

// clientsPart writes the table of the typed clients cs of the API group
// named pkg, as tableName(pkg).
func clientsPart(b *bytes.Buffer, pkg string, cs []client) {
	fmt.Fprintf(b, "\n// %s is the typed clients of kubernetes.Interface\n// of the %s API group, by the pointer type of their list.\nvar %[1]s = map[reflect.Type]typedClient{\n", tableName(pkg), pkg)
	for _, c := range cs {
		ns := ""
		if c.namespaced {
			ns = "namespace"
		}
		fmt.Fprintf(b, `	reflect.TypeFor[*%[1]s.%[2]s](): {group: %[3]q, resource: %[4]q, namespaced: %[5]t,
		open: func(c kubernetes.Interface, namespace string) (listFunc, watchFunc, error) {
			if g := c.%[3]s(); g != nil {
				return typedListWatch(c, "%[3]s().%[4]s()", g.%[4]s(%[6]s))
			}
			return nil, nil, noTypedClient(c, "%[3]s()")
		}},
`, apiAlias(c.listPath), c.listName, c.group, c.resource, c.namespaced, ns)
	}
	b.WriteString("}\n")
}

// tableName is the name of the table of the typed clients of the API group
// named pkg.
func tableName(pkg string) string { return pkg + "TypedClients" }

// apiGroup is the API group of c: the element of its list's package path
// before the version (k8s.io/api/apps/v1: apps).
func (c client) apiGroup() string { return path.Base(path.Dir(c.listPath)) }
