package archtest

import (
	"bufio"
	"bytes"
	"os/exec"
	"path"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/warmcache/warmcache"

// rule says which module packages a package (or, ending in "/...", a
// package and those below it) may import, and which other imports it must
// not have. The first rule that matches a package applies.
type rule struct {
	pkg   string
	allow []string
	deny  []string // import paths outside the module, prefixes
}

// library is what a controller imports; it never depends on test support,
// examples, benchmarks or the CLI.
var library = []string{"store", "store/wire", "store/codec", "store/seal", "store/memory", "store/bolt", "store/bolt/metrics", "deltafifo", "reflector", "informer", "informer/metrics", "factory", "informers", "informers/dynamicinformer", "listers/...", "backupauth"}

var rules = []rule{
	// The contract depends on nothing of ours.
	{pkg: "store"},
	{pkg: "store/wire"},
	{pkg: "store/codec", allow: []string{"store/wire"}},
	// Sealing: a codec around a codec, and its keys.
	{pkg: "store/seal", allow: []string{"store/codec", "store/wire"}},
	{pkg: "store/memory", allow: []string{"store"}},
	{pkg: "store/storetest", allow: []string{"store", "internal/podgen"}},
	// The bolt store: the contract, its codecs, its own internals.
	{pkg: "store/bolt/internal/...", allow: []string{"store", "store/codec", "store/wire", "store/bolt/internal/...", "internal/fsync"}},
	{pkg: "store/bolt/inspect", allow: []string{"store", "store/codec", "store/wire", "store/seal", "store/bolt", "store/bolt/internal/...", "internal/fsync"}},
	{pkg: "store/bolt", allow: []string{"store", "store/codec", "store/wire", "store/bolt/internal/...", "internal/fsync"}},
	// The bolt store's Prometheus metrics, as informer/metrics is the pipeline's.
	{pkg: "store/bolt/metrics", allow: []string{"store/bolt"}},
	// The pipeline knows the contract only, never a store.
	{pkg: "deltafifo", allow: []string{"store"}},
	{pkg: "reflector", allow: []string{"store"}},
	{pkg: "informer/metrics", allow: []string{"informer", "deltafifo", "reflector"}},
	{pkg: "informer", allow: []string{"store", "store/wire", "deltafifo", "reflector", "internal/memrelease"},
		deny: []string{"k8s.io/client-go/rest", "k8s.io/client-go/dynamic", "k8s.io/client-go/kubernetes", "go.etcd.io/bbolt"}},
	// The listers read through the contract; their generator is a tool.
	{pkg: "listers/internal/...", allow: []string{}},
	{pkg: "listers/...", allow: []string{"store", "listers"}},
	// The wiring: the only library package that knows every store.
	{pkg: "factory/internal/...", allow: []string{}},
	{pkg: "factory", allow: []string{"factory/internal/...", "informer", "informer/metrics", "store", "store/codec", "store/wire", "store/seal", "store/memory", "store/bolt", "deltafifo", "reflector"}},
	// client-go's SharedInformerFactory on the wiring, with the listers
	// that select in the store; its generator is a tool.
	{pkg: "informers/internal/...", allow: []string{}},
	{pkg: "informers", allow: []string{"factory", "listers/...", "informers/internal/..."}},
	// client-go's DynamicSharedInformerFactory, beside it.
	{pkg: "informers/dynamicinformer", allow: []string{"factory", "informers", "informers/internal/..."}},
	// Who may download a file's backup: the bolt store's Authorizer.
	{pkg: "backupauth", allow: []string{"store/bolt"}},
	// The CLI reads files through the library and its inspection package.
	{pkg: "cmd/snapshot/...", allow: append([]string{"cmd/snapshot/...", "store/bolt/inspect", "internal/fsync"}, library...)},
	// Benchmarks and examples use the library and the test support.
	{pkg: "benchmarks/...", allow: append([]string{"benchmarks/...", "internal/..."}, library...)},
	{pkg: "examples/...", allow: append([]string{"examples/...", "internal/..."}, library...)},
	{pkg: "test/...", allow: append([]string{"internal/..."}, library...)},
	// The test kit: what every package's tests share. It imports nothing
	// of ours, so that the in-package tests of any package can import it
	// without a cycle.
	{pkg: "internal/testkit", allow: []string{}},
	// The process's release of a relist's memory, which the informer
	// asks for: it knows nothing of ours.
	{pkg: "internal/memrelease", allow: []string{}},
	// Test support and tools: anything but examples, benchmarks, the CLI.
	{pkg: "internal/...", allow: append([]string{"internal/...", "store/storetest"}, library...)},
}

func matches(pattern, pkg string) bool {
	if base, ok := strings.CutSuffix(pattern, "/..."); ok {
		return pkg == base || strings.HasPrefix(pkg, base+"/")
	}
	return pkg == pattern
}

func ruleFor(pkg string) (rule, bool) {
	for _, r := range rules {
		if matches(r.pkg, pkg) {
			return r, true
		}
	}
	return rule{}, false
}

// imports lists every package of the module with its non-test imports.
func imports(t *testing.T) map[string][]string {
	t.Helper()
	cmd := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, module+"/...")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	pkgs := map[string][]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) > 0 {
			pkgs[f[0]] = f[1:]
		}
	}
	return pkgs
}

func TestImportRules(t *testing.T) {
	pkgs := imports(t)
	if len(pkgs) < 20 {
		t.Fatalf("go list found %d packages; the module has more", len(pkgs))
	}
	for full, imps := range pkgs {
		pkg := strings.TrimPrefix(strings.TrimPrefix(full, module), "/")
		r, ok := ruleFor(pkg)
		if !ok {
			t.Errorf("%s has no import rule: add one to rules and to ARCHITECTURE.md", pkg)
			continue
		}
		for _, imp := range imps {
			if own, ok := strings.CutPrefix(imp, module+"/"); ok {
				if !slices.ContainsFunc(r.allow, func(p string) bool { return matches(p, own) }) {
					t.Errorf("%s imports %s, which its rule (%s) does not allow", pkg, own, r.pkg)
				}
				continue
			}
			for _, d := range r.deny {
				if imp == d || strings.HasPrefix(imp, d+"/") {
					t.Errorf("%s imports %s, which its rule (%s) denies", pkg, imp, r.pkg)
				}
			}
		}
	}
}

// The rules themselves: a rule that no longer matches a package is stale.
func TestEveryRuleMatches(t *testing.T) {
	pkgs := imports(t)
	for _, r := range rules {
		found := false
		for full := range pkgs {
			if matches(r.pkg, strings.TrimPrefix(strings.TrimPrefix(full, module), "/")) {
				found = true
				break
			}
		}
		if !found {
			t.Errorf("rule %s matches no package", r.pkg)
		}
	}
}

// The rule checker must catch what it is for.
func TestRulesCatchForbiddenImports(t *testing.T) {
	for _, tc := range []struct{ pkg, imp string }{
		{"informer", "store/bolt"},
		{"informer", "factory"},
		{"store", "informer"},
		{"store/memory", "store/bolt"},
		{"deltafifo", "informer"},
		{"factory", "internal/testenv"},
		{"store/bolt", "examples/workqueue"},
		{"listers/core/v1", "store/bolt"},
		{"listers/core/v1", "informer"},
		{"internal/testkit", "store"},
		{"internal/testkit", "internal/fakesource"},
	} {
		r, ok := ruleFor(tc.pkg)
		if !ok {
			t.Fatalf("no rule for %s", tc.pkg)
		}
		if slices.ContainsFunc(r.allow, func(p string) bool { return matches(p, tc.imp) }) {
			t.Errorf("rule %s allows %s -> %s", r.pkg, tc.pkg, tc.imp)
		}
	}
	if !matches("store/bolt/internal/...", path.Join("store/bolt/internal", "filecheck")) {
		t.Error("a /... pattern does not match a package below it")
	}
}
