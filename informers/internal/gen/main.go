// Command gen writes package informers' generated code from client-go's,
// for the client-go version go.mod requires, one file per API group
// (zz_generated_<group>.go: zz_generated_core.go, zz_generated_apps.go, ...),
// each with
//
//   - the group, version and typed informer accessors of the group,
//     implementing client-go's generated interfaces (core.Interface,
//     v1.Interface, v1.PodInformer, ...) around client-go's own, so that
//     every typed informer comes through the Factory's InformerFor as
//     before; each typed accessor returns withLister (lister.go) of
//     client-go's typed informer and of the constructor of warmcache's
//     lister of the same interface (package listers/<group>/<version>),
//     which selects in the store;
//   - the table of the group's typed clients of kubernetes.Interface
//     (client.CoreV1().Pods(namespace) ...) by the type of their list, each
//     reached by plain calls (typedListWatch in typed.go), so that package
//     informers looks no method up by name at run time (which would make
//     the linker keep every exported method of every type it reaches).
//
// zz_generated.go joins the groups' tables into typedClients.
//
// It reads client-go's SharedInformerFactory and kubernetes.Interface by
// reflection. Run it with go generate ./informers; it first removes the
// files it wrote before, and a test checks that the checked-in files are
// what it writes.
package main

import (
	"flag"
	"fmt"
	"go/format"
	"os"
	"path/filepath"
	"reflect"

	clientinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
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
	clients, err := scanClients(reflect.TypeFor[kubernetes.Interface]())
	if err != nil {
		return err
	}
	if len(clients) == 0 {
		return fmt.Errorf("no typed clients found on %s", reflect.TypeFor[kubernetes.Interface]())
	}
	old, err := filepath.Glob(filepath.Join(out, filePrefix+"*.go"))
	if err != nil {
		return err
	}
	for _, name := range old {
		if err := os.Remove(name); err != nil {
			return err
		}
	}
	files := groupFiles(groups, clients)
	for _, f := range files {
		if err := writeGo(filepath.Join(out, f.name()), f.source()); err != nil {
			return err
		}
	}
	return writeGo(filepath.Join(out, filePrefix+".go"), indexSource(files))
}

func writeGo(path, src string) error {
	b, err := format.Source([]byte(src))
	if err != nil {
		return fmt.Errorf("%s: %w\n%s", path, err, src)
	}
	return os.WriteFile(path, b, 0o644)
}
