package cli

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/cache"

	"github.com/warmcache/warmcache/store/bolt"
	"github.com/warmcache/warmcache/store/codec"
)

// unsafeBackupHandler returns db's backup handler without authorization.
func unsafeBackupHandler(t *testing.T, db *bolt.DB) http.Handler {
	t.Helper()
	h, err := db.BackupHandler(bolt.BackupHandlerOptions{UnsafeNoAuthorization: true})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// entries lists the names in dir, to check that no temporary file is left.
func entries(t *testing.T, dir string) []string {
	t.Helper()
	des, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, de := range des {
		out = append(out, de.Name())
	}
	return out
}

// sameListing checks that two files list the same objects of every resource.
func sameListing(t *testing.T, a, b string) {
	t.Helper()
	for _, res := range []string{"pods", "deployments.apps", "widgets.example.com", "nodes"} {
		ra, rb := run(t, "list", a, res, "-A", "-o", "json"), run(t, "list", b, res, "-A", "-o", "json")
		if ra.code != ExitOK || rb.code != ExitOK || ra.stdout != rb.stdout {
			t.Errorf("%s: listings differ (exit %d/%d): %s %s", res, ra.code, rb.code, ra.stderr, rb.stderr)
		}
	}
}

func TestBackup(t *testing.T) {
	src := fixture(t, fixtureOptions{})
	// The running controller and its backup endpoint.
	db, err := bolt.Open(context.Background(), src, bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	mux := http.NewServeMux()
	mux.Handle("/backup", unsafeBackupHandler(t, db))
	mux.HandleFunc("/garbage", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, strings.Repeat("not a cache file ", 1000)) })
	mux.HandleFunc("/short", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Length", "100000")
		fmt.Fprint(w, "truncated")
	})
	// /stall sends part of a file, then nothing until the client gives up.
	mux.HandleFunc("/stall", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "100000")
		fmt.Fprint(w, "partial")
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	out := filepath.Join(dir, "copy.db")

	if r := run(t, "info", src, "--lock-timeout", "20ms"); r.code != ExitLocked {
		t.Fatalf("the source is not locked: exit %d", r.code)
	}
	r := run(t, "backup", srv.URL+"/backup", "--output", out)
	if r.code != ExitOK || !strings.Contains(r.stdout, "backed up "+srv.URL+"/backup to "+out) {
		t.Fatalf("backup: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := run(t, "verify", out); r.code != ExitOK {
		t.Errorf("verify of the backup: exit %d\n%s", r.code, r.stdout)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	sameListing(t, src, out)
	if got := entries(t, dir); len(got) != 1 {
		t.Errorf("files left in the output directory: %q", got)
	}

	srv2 := httptest.NewServer(mux) // the handler of a closed DB answers 503
	t.Cleanup(srv2.Close)
	tests := []struct {
		name     string
		args     []string
		wantCode int
		wantErr  string
	}{
		{"output exists", []string{"backup", srv.URL + "/backup", "--output", out}, ExitError, "exists"},
		{"wrong path", []string{"backup", srv.URL + "/nope", "--output", out + "2"}, ExitNotFound, "HTTP 404"},
		{"closed cache", []string{"backup", srv2.URL + "/backup", "--output", out + "2"}, ExitError, "HTTP 503"},
		{"not a cache file", []string{"backup", srv.URL + "/garbage", "--output", out + "2"}, ExitCorrupt, "is not a valid warmcache file"},
		{"short body", []string{"backup", srv.URL + "/short", "--output", out + "2"}, ExitError, "ended early"},
		{"server stops sending", []string{"backup", srv.URL + "/stall", "--output", out + "2", "--stall-timeout", "100ms"}, ExitError, "the server stopped sending: nothing received for 100ms"},
		{"nobody listening", []string{"backup", "http://127.0.0.1:1/backup", "--output", out + "2"}, ExitError, "Is the process running"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := run(t, tt.args...)
			if r.code != tt.wantCode || !strings.Contains(r.stderr, tt.wantErr) {
				t.Errorf("exit %d, want %d; stderr %q should mention %q", r.code, tt.wantCode, r.stderr, tt.wantErr)
			}
			if got := entries(t, dir); len(got) != 1 {
				t.Errorf("files left in the output directory: %q", got)
			}
			// The temporary file is gone: naming it, or advice on a
			// damaged cache file, would mislead.
			for _, wrong := range []string{".tmp-", "moves such a file aside"} {
				if strings.Contains(r.stderr, wrong) {
					t.Errorf("stderr mentions %q:\n%s", wrong, r.stderr)
				}
			}
		})
	}
}

func TestBackupForceReplaces(t *testing.T) {
	src := fixture(t, fixtureOptions{})
	db, err := bolt.Open(context.Background(), src, bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	srv := httptest.NewServer(unsafeBackupHandler(t, db))
	t.Cleanup(srv.Close)
	out := filepath.Join(t.TempDir(), "copy.db")
	if err := os.WriteFile(out, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	if r := run(t, "backup", srv.URL, "--output", out, "--force"); r.code != ExitOK {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if r := run(t, "info", out); r.code != ExitOK {
		t.Errorf("the replaced output does not open: %s", r.stderr)
	}
}

func TestCompact(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "cache.db")
	writeFixture(t, src, fixtureOptions{})
	// Free pages: a large relist replaced by a small one.
	db, err := bolt.Open(context.Background(), src, bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	big := make([]interface{}, 0, 3000)
	for i := range 3000 {
		big = append(big, &unstructured.Unstructured{Object: map[string]interface{}{
			"apiVersion": "example.com/v1alpha1", "kind": "Widget",
			"metadata": map[string]interface{}{"namespace": "lab", "name": fmt.Sprintf("big-%04d", i), "resourceVersion": "500"},
			"spec":     map[string]interface{}{"pad": strings.Repeat("x", 2048)},
		}})
	}
	fill(t, db, widgetsID, codec.Unstructured(), cache.Indexers{}, big, "500", 1000)
	fill(t, db, widgetsID, codec.Unstructured(), cache.Indexers{}, big[:2], "501", 1000)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	unchanged(t, src)
	out := filepath.Join(dir, "compact.db")
	r := run(t, "compact", src, "--output", out)
	if r.code != ExitOK {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	srcInfo, _ := os.Stat(src)
	outInfo, err := os.Stat(out)
	if err != nil {
		t.Fatal(err)
	}
	if outInfo.Size() >= srcInfo.Size()/2 {
		t.Errorf("compacted size %d, original %d: expected at most half", outInfo.Size(), srcInfo.Size())
	}
	if r := run(t, "verify", out); r.code != ExitOK {
		t.Errorf("verify of the copy: %s", r.stdout)
	}
	sameListing(t, src, out)
	ri, ro := run(t, "info", src, "-o", "json"), run(t, "info", out, "-o", "json")
	for _, field := range []string{`"objects": 2`, `"resourceVersion": "501"`} {
		if !strings.Contains(ri.stdout, field) || !strings.Contains(ro.stdout, field) {
			t.Errorf("info of the original or the copy lacks %s", field)
		}
	}
	// The original's state file and writers' lock file were written by
	// the library that created it (bolt.SyncOnClose, bolt.LockSuffix);
	// compact leaves nothing else behind.
	if got := entries(t, dir); !slices.Equal(got, []string{"cache.db", "cache.db.lock", "cache.db.state", "compact.db"}) {
		t.Errorf("files in the directory: %q, want the original, its state and lock files and the copy", got)
	}
	// --force replaces, without it the command refuses.
	if r := run(t, "compact", src, "--output", out); r.code != ExitError {
		t.Errorf("compact onto an existing output: exit %d", r.code)
	}
	if r := run(t, "compact", src, "--output", out, "--force"); r.code != ExitOK {
		t.Errorf("compact --force: exit %d: %s", r.code, r.stderr)
	}
}
