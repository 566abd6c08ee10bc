package cli

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"github.com/vmihailenco/msgpack/v5"
	bbolt "go.etcd.io/bbolt"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/warmcache/warmcache/store/bolt"
	"github.com/warmcache/warmcache/store/bolt/inspect"
	"github.com/warmcache/warmcache/store/codec"
)

// badFile prepares a file in dir and returns its path.
type badFile func(t *testing.T, dir string) string

func emptyFile(t *testing.T, dir string) string {
	p := filepath.Join(dir, "empty.db")
	if err := os.WriteFile(p, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func garbageFile(t *testing.T, dir string) string {
	p := filepath.Join(dir, "garbage.db")
	b := make([]byte, 64<<10)
	r := rand.New(rand.NewPCG(7, 7))
	for i := range b {
		b[i] = byte(r.UintN(256))
	}
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func truncatedFile(t *testing.T, dir string) string {
	p := filepath.Join(dir, "truncated.db")
	writeFixture(t, p, fixtureOptions{})
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(p, fi.Size()/2); err != nil {
		t.Fatal(err)
	}
	return p
}

func foreignFile(t *testing.T, dir string) string { return writeForeign(t, dir) }

// writeForeign writes a bbolt file of another program.
func writeForeign(t testing.TB, dir string) string {
	p := filepath.Join(dir, "foreign.db")
	db, err := bbolt.Open(p, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bbolt.Tx) error {
		b, err := tx.CreateBucket([]byte("settings"))
		if err != nil {
			return err
		}
		return b.Put([]byte("theme"), []byte("dark"))
	})
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func newerFormatFile(t *testing.T, dir string) string {
	p := filepath.Join(dir, "newer.db")
	writeFixture(t, p, fixtureOptions{podsOnly: true})
	mutate(t, p, func(tx *bbolt.Tx) error {
		b := tx.Bucket([]byte("warmcache"))
		var m map[string]interface{}
		if err := msgpack.Unmarshal(b.Get([]byte("format")), &m); err != nil {
			return err
		}
		m["version"] = inspect.FormatVersion + 1
		v, err := msgpack.Marshal(m)
		if err != nil {
			return err
		}
		return b.Put([]byte("format"), v)
	})
	return p
}

func newerSchemaFile(t *testing.T, dir string) string {
	p := filepath.Join(dir, "schema.db")
	writeFixture(t, p, fixtureOptions{podsOnly: true})
	mutate(t, p, func(tx *bbolt.Tx) error {
		return editMeta(t, tx, podsID, map[string]interface{}{"schema": inspect.SchemaVersion + 1})
	})
	return p
}

func unknownCodecFile(t *testing.T, dir string) string {
	p := filepath.Join(dir, "codec.db")
	writeFixture(t, p, fixtureOptions{podsOnly: true})
	mutate(t, p, func(tx *bbolt.Tx) error {
		return editMeta(t, tx, podsID, map[string]interface{}{"codec": "zstd-proto"})
	})
	return p
}

func corruptItemFile(t *testing.T, dir string) string {
	p := filepath.Join(dir, "item.db")
	writeFixture(t, p, fixtureOptions{podsOnly: true})
	mutate(t, p, func(tx *bbolt.Tx) error {
		return setEnvelope(t, tx, podsID, "ns-001/app-1-00000001-x7k2p", []byte("\x94\xa11\xa1u\xc4\x03abc"))
	})
	return p
}

// twoScopesFile holds pods under two identities (all namespaces, and
// namespace ns-001 only).
func twoScopesFile(t *testing.T, dir string) string {
	p := filepath.Join(dir, "scopes.db")
	writeFixture(t, p, fixtureOptions{podsOnly: true})
	db, err := bolt.Open(context.Background(), p, bolt.Options{Logger: klog.Background()})
	if err != nil {
		t.Fatal(err)
	}
	id := podsID
	id.Namespace = "ns-001"
	fill(t, db, id, codec.Protobuf(nil), cache.Indexers{}, []interface{}{&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns-001", Name: "scoped", ResourceVersion: "9"}}}, "9", 10)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	return p
}

func fixtureFile(t *testing.T, dir string) string {
	p := filepath.Join(dir, "cache.db")
	writeFixture(t, p, fixtureOptions{})
	return p
}

// fixtureAndExisting is a fixture with another file, existing.db, beside it.
func fixtureAndExisting(t *testing.T, dir string) string {
	if err := os.WriteFile(filepath.Join(dir, "existing.db"), []byte("keep me"), 0o600); err != nil {
		t.Fatal(err)
	}
	unchanged(t, filepath.Join(dir, "existing.db"))
	return fixtureFile(t, dir)
}

// TestBadInput checks that every kind of bad input gives a clear error and
// its exit code, never a panic, and leaves the file as it was.
func TestBadInput(t *testing.T) {
	tests := []struct {
		name     string
		file     badFile
		args     []string // FILE is replaced by the file's path
		wantCode int
		wantErr  []string // substrings of stderr
	}{
		{"missing file", func(_ *testing.T, dir string) string { return filepath.Join(dir, "missing.db") },
			[]string{"info", "FILE"}, ExitNotFound, []string{"missing.db does not exist"}},
		{"directory", func(_ *testing.T, dir string) string { return dir },
			[]string{"list", "FILE", "pods"}, ExitUsage, []string{"is a directory, not a cache file"}},
		{"empty file", emptyFile, []string{"info", "FILE"}, ExitCorrupt, []string{"is empty (0 bytes)"}},
		{"garbage file", garbageFile, []string{"info", "FILE"}, ExitCorrupt, []string{"not a readable warmcache cache file", "It is a cache"}},
		{"truncated file", truncatedFile, []string{"list", "FILE", "pods", "-A"}, ExitCorrupt, []string{"not a readable warmcache cache file"}},
		{"bbolt file of another program", foreignFile, []string{"verify", "FILE"}, ExitCorrupt, []string{"not a warmcache file", "settings"}},
		{"newer file format", newerFormatFile, []string{"info", "FILE"}, ExitCorrupt, []string{"written by a newer warmcache", "file format version 2 is newer than supported version 1"}},
		{"newer resource schema", newerSchemaFile, []string{"list", "FILE", "pods", "-A"}, ExitCorrupt, []string{fmt.Sprintf("resource schema version %d is newer than supported version %d", inspect.SchemaVersion+1, inspect.SchemaVersion)}},
		{"newer resource schema, export", newerSchemaFile, []string{"export", "FILE", "pods"}, ExitCorrupt, []string{"newer"}},
		{"unknown codec", unknownCodecFile, []string{"get", "FILE", "pods", "app-1-00000001-x7k2p", "-n", "ns-001"}, ExitCorrupt, []string{`unknown codec name: "zstd-proto"`}},
		{"corrupt item", corruptItemFile, []string{"list", "FILE", "pods", "-A", "-o", "name"}, ExitCorrupt, []string{"ns-001/app-1-00000001-x7k2p", "is damaged: 1 object could not be read, first"}},
		{"unknown resource", fixtureFile, []string{"list", "FILE", "foos"}, ExitNotFound,
			[]string{`resource "foos" not found`, "The file holds: deployments.apps, nodes, pods, widgets.example.com"}},
		{"resource of another group", fixtureFile, []string{"list", "FILE", "deployments.extensions"}, ExitNotFound, []string{"not found"}},
		{"ambiguous resource", twoScopesFile, []string{"list", "FILE", "pods"}, ExitUsage,
			[]string{`"pods" matches 2 resources`, "res;g=;v=v1;r=pods;k=Pod;ns=ns-001;l=;f=;s="}},
		{"bad label selector", fixtureFile, []string{"list", "FILE", "pods", "-l", "app in ("}, ExitUsage, []string{"bad label selector"}},
		{"bad field selector", fixtureFile, []string{"list", "FILE", "pods", "--field-selector", "metadata.name"}, ExitUsage, []string{"bad field selector"}},
		{"unsupported field", fixtureFile, []string{"list", "FILE", "deploy", "--field-selector", "spec.nodeName=x"}, ExitUsage,
			[]string{`field "spec.nodeName" is not supported for deployments.apps; supported fields: metadata.name, metadata.namespace`}},
		{"unknown output format", fixtureFile, []string{"list", "FILE", "pods", "-o", "xml"}, ExitUsage,
			[]string{`unknown output format "xml": allowed formats are table, wide, json, yaml, name`}},
		{"export as a table", fixtureFile, []string{"export", "FILE", "pods", "-o", "table"}, ExitUsage, []string{"allowed formats are yaml, json"}},
		{"info as wide", fixtureFile, []string{"info", "FILE", "-o", "wide"}, ExitUsage, []string{"allowed formats are text, json, yaml"}},
		{"missing argument", fixtureFile, []string{"list", "FILE"}, ExitUsage, []string{"accepts 2 arg(s), received 1", "Usage: snapshot list FILE TYPE[,TYPE...]", "' lists the resources the file holds.", "snapshot list --help"}},
		{"missing resource of export", fixtureFile, []string{"export", "FILE"}, ExitUsage, []string{"Usage: snapshot export FILE RESOURCE", "\n'snapshot info ", "' lists the resources the file holds."}},
		{"file after the resource", fixtureFile, []string{"list", "pods", "FILE", "-A"}, ExitUsage,
			[]string{"file pods does not exist", "the file comes first", "Did you mean 'snapshot list ", " pods' (with the same flags)?\nUsage: snapshot list FILE"}},
		{"file after the type, get", fixtureFile, []string{"get", "pods", "FILE", "web-0"}, ExitUsage, []string{"the file comes first", " pods web-0'"}},
		{"missing first file of diff", fixtureFile, []string{"diff", "missing.db", "FILE"}, ExitNotFound, []string{"file missing.db does not exist"}},
		{"missing argument of index", fixtureFile, []string{"index", "FILE", "pods"}, ExitUsage, []string{"Usage: snapshot index FILE RESOURCE INDEX [VALUE]"}},
		{"unknown flag", fixtureFile, []string{"info", "FILE", "--bogus"}, ExitUsage, []string{"unknown flag: --bogus"}},
		{"unknown command", fixtureFile, []string{"inf", "FILE"}, ExitUsage, []string{`unknown command "inf"`, `Did you mean "info"?`}},
		{"bad jsonpath", fixtureFile, []string{"list", "FILE", "pods", "-o", "jsonpath={.items[*"}, ExitUsage, []string{"bad output template: jsonpath"}},
		{"bad go-template", fixtureFile, []string{"get", "FILE", "pods", "x", "-o", "go-template={{.metadata.name"}, ExitUsage, []string{"bad output template: go-template"}},
		{"bad custom-columns", fixtureFile, []string{"list", "FILE", "pods", "-o", "custom-columns=NAME"}, ExitUsage, []string{"expected <header>:<json-path-expr>"}},
		{"empty custom-columns", fixtureFile, []string{"list", "FILE", "pods", "-o", "custom-columns="}, ExitUsage, []string{"no custom columns given"}},
		{"bad custom-columns path", fixtureFile, []string{"list", "FILE", "pods", "-o", "custom-columns=A:{.a}{.b}"}, ExitUsage, []string{"unexpected path"}},
		{"bad sort-by", fixtureFile, []string{"list", "FILE", "pods", "--sort-by", "{.a}{.b}"}, ExitUsage, []string{"--sort-by"}},
		{"unparsable sort-by", fixtureFile, []string{"list", "FILE", "pods", "--sort-by", ".items[*"}, ExitUsage, []string{"--sort-by"}},
		{"empty label column", fixtureFile, []string{"list", "FILE", "pods", "-L", "a,,b"}, ExitUsage, []string{"empty label key"}},
		{"sort-by on get", fixtureFile, []string{"get", "FILE", "pods", "x", "--sort-by", ".metadata.name"}, ExitUsage, []string{"unknown flag: --sort-by", "--sort-by is list's", "snapshot list FILE"}},
		{"all namespaces on get", fixtureFile, []string{"get", "FILE", "pods", "-A"}, ExitUsage,
			[]string{"unknown shorthand flag: 'A'", "-A (--all-namespaces) is list's: get looks objects up by name"}},
		{"unknown flag on get", fixtureFile, []string{"get", "FILE", "pods", "x", "--bogus"}, ExitUsage, []string{"unknown flag: --bogus"}},
		{"list of TYPE/NAME", fixtureFile, []string{"list", "FILE", "pod/x"}, ExitUsage, []string{"not TYPE/NAME", "snapshot get"}},
		{"get without a name", fixtureFile, []string{"get", "FILE", "pods"}, ExitUsage, []string{"get needs object names for pods", "snapshot list"}},
		{"get TYPE/ without a name", fixtureFile, []string{"get", "FILE", "pod/"}, ExitUsage, []string{`"pod/" is not TYPE/NAME`}},
		{"get TYPE/NAME mixed with a name", fixtureFile, []string{"get", "FILE", "pod/a", "b"}, ExitUsage, []string{`"b" is not TYPE/NAME`}},
		{"get of an empty type", fixtureFile, []string{"get", "FILE", "pods,", "x"}, ExitUsage, []string{"empty resource type"}},
		{"get of an unknown type among known", fixtureFile, []string{"get", "FILE", "pods,foos", "x"}, ExitNotFound, []string{`resource "foos" not found`}},
		{"get of an empty name", fixtureFile, []string{"get", "FILE", "pods", ""}, ExitUsage, []string{"NAME must not be empty"}},
		{"ignore-not-found with a missing resource", fixtureFile, []string{"get", "FILE", "foos", "x", "--ignore-not-found"}, ExitNotFound, []string{`resource "foos" not found`}},
		{"completion of an unknown shell", fixtureFile, []string{"completion", "tcsh"}, ExitError, []string{`unsupported shell type "tcsh"`, "bash, fish, powershell, zsh"}},
		{"completion without a shell", fixtureFile, []string{"completion"}, ExitUsage, []string{"shell not specified"}},
		{"file under a regular file", func(t *testing.T, dir string) string { return filepath.Join(fixtureFile(t, dir), "x.db") },
			[]string{"list", "FILE", "pods"}, ExitError, []string{"x.db: not a directory"}},
		{"missing object", fixtureFile, []string{"get", "FILE", "pods", "nope", "-n", "ns-001"}, ExitNotFound, []string{`Error from cache file (NotFound): pods "nope" not found`, "-n ns-001"}},
		{"unknown index", fixtureFile, []string{"index", "FILE", "pods", "byUID"}, ExitNotFound, []string{`no index "byUID"`, "Its indexes: namespace, nodeName"}},
		{"counts with a value", fixtureFile, []string{"index", "FILE", "pods", "namespace", "x", "--counts"}, ExitUsage, []string{"takes no VALUE"}},
		{"negative context", fixtureFile, []string{"diff", "FILE", "FILE", "-U", "-1"}, ExitUsage, []string{"--unified"}},
		{"compact without output", fixtureFile, []string{"compact", "FILE"}, ExitUsage, []string{"--output is required"}},
		{"compact onto itself", fixtureFile, []string{"compact", "FILE", "--output", "FILE", "--force"}, ExitUsage, []string{"never writes the file it reads"}},
		{"compact onto an existing file", fixtureAndExisting, []string{"compact", "FILE", "--output", "DIR/existing.db"}, ExitError, []string{"existing.db exists", "--force"}},
		{"compact into a missing directory", fixtureFile, []string{"compact", "FILE", "--output", "/nonexistent-dir/x.db"}, ExitNotFound, []string{"directory /nonexistent-dir"}},
		{"backup of a bad URL", fixtureFile, []string{"backup", "ftp://host/x", "--output", "x.db"}, ExitUsage, []string{"not an http:// or https:// URL"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := tt.file(t, dir)
			if fi, err := os.Stat(path); err == nil && fi.Mode().IsRegular() {
				unchanged(t, path)
			}
			args := make([]string, len(tt.args))
			for i, a := range tt.args {
				args[i] = strings.ReplaceAll(strings.ReplaceAll(a, "FILE", path), "DIR", dir)
			}
			r := run(t, append(args, "--lock-timeout", "2s")...)
			if r.code != tt.wantCode {
				t.Errorf("exit code %d, want %d\nstderr: %s", r.code, tt.wantCode, r.stderr)
			}
			// kubectl's two forms: "error: ...", and a NotFound object's
			// "Error from ... (NotFound): ...".
			if !strings.HasPrefix(r.stderr, "error: ") && !strings.Contains(r.stderr, "\nerror: ") && !strings.HasPrefix(r.stderr, "Error from cache file (NotFound): ") {
				t.Errorf("stderr has no \"error: \" line: %q", r.stderr)
			}
			for _, want := range tt.wantErr {
				if !strings.Contains(r.stderr, want) {
					t.Errorf("stderr does not mention %q:\n%s", want, r.stderr)
				}
			}
			if strings.HasPrefix(tt.args[0], "list") && r.stdout != "" && r.code != ExitCorrupt {
				t.Errorf("stdout not empty on error: %q", r.stdout)
			}
		})
	}
}

func TestSpecialFileIsRefused(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no named pipes in the file system")
	}
	p := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	// Opening a FIFO for reading would block until a writer comes: the
	// command must refuse it before opening it.
	r := run(t, "info", p)
	if r.code != ExitUsage || !strings.Contains(r.stderr, "not a regular file") {
		t.Errorf("exit %d, stderr %q; want a usage error naming a non-regular file", r.code, r.stderr)
	}
}

// TestUnknownCodecStillDescribed checks that what needs no decoding works
// on a resource whose codec this binary does not know.
func TestUnknownCodecStillDescribed(t *testing.T) {
	path := unknownCodecFile(t, t.TempDir())
	unchanged(t, path)
	r := run(t, "info", path)
	if r.code != ExitOK || !strings.Contains(r.stdout, "Codec:             zstd-proto") || !strings.Contains(r.stdout, "namespace (6 values)") {
		t.Errorf("info: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	r = run(t, "index", path, "pods", "nodeName", "node-0001")
	if r.code != ExitOK || r.stdout != "ns-001/app-1-00000001-x7k2p\n" {
		t.Errorf("index: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	r = run(t, "verify", path)
	if r.code != ExitProblems || !strings.Contains(r.stdout, `not-decoded: no codec "zstd-proto" available`) {
		t.Errorf("verify: exit %d\n%s", r.code, r.stdout)
	}
}

// TestAmbiguityResolvedByID checks that the ID info prints selects one of
// several scopes of a resource.
func TestAmbiguityResolvedByID(t *testing.T) {
	path := twoScopesFile(t, t.TempDir())
	r := run(t, "list", path, "res;g=;v=v1;r=pods;k=Pod;ns=ns-001;l=;f=;s=", "-o", "name")
	// The scope's namespace is the default one.
	if r.code != ExitOK || r.stdout != "pod/scoped\n" {
		t.Errorf("exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
}
