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
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/warmcache/warmcache/backupauth"
	"github.com/warmcache/warmcache/internal/podgen"
	"github.com/warmcache/warmcache/store/bolt"
	"github.com/warmcache/warmcache/store/codec"
)

// eventually waits until cond holds, and fails the test with what when it
// does not within 30 seconds.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// backupEndpoint is a running process's cache behind its backup handler,
// with a static token; while broken is set it answers a body that is not
// a cache file.
type backupEndpoint struct {
	db     *bolt.DB
	url    string
	broken atomic.Bool
	// token is the file holding the token.
	token string
}

func newBackupEndpoint(t *testing.T, o fixtureOptions) *backupEndpoint {
	t.Helper()
	db, err := bolt.Open(context.Background(), fixture(t, o), bolt.Options{Sync: bolt.UnsafeNoSync})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	static, err := backupauth.StaticToken(backupToken)
	if err != nil {
		t.Fatal(err)
	}
	forbidding := bolt.AuthorizerFunc(func(r *http.Request) (string, error) {
		if r.Header.Get("Authorization") == "Bearer "+knownButNoWay {
			return "", fmt.Errorf("test: %w: user %q may not get /backup", bolt.ErrForbidden, "someone")
		}
		return static.Authorize(r)
	})
	h, err := db.BackupHandler(bolt.BackupHandlerOptions{Authorizer: forbidding})
	if err != nil {
		t.Fatal(err)
	}
	e := &backupEndpoint{db: db, token: filepath.Join(t.TempDir(), "token")}
	if err := os.WriteFile(e.token, []byte(backupToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/backup", func(w http.ResponseWriter, r *http.Request) {
		if e.broken.Load() {
			fmt.Fprint(w, strings.Repeat("not a cache file ", 1000))
			return
		}
		h.ServeHTTP(w, r)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	e.url = srv.URL + "/backup"
	return e
}

// TestServeURL serves the backup URL of a running process with --refresh:
// a refresh picks up the process's changes (objects and a new resource in
// discovery) and ends open watches; a refresh that fails keeps the last
// good copy served and says why; the copies are removed when serve stops.
func TestServeURL(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	t.Setenv("KUBECONFIG", filepath.Join(t.TempDir(), "no-kubeconfig"))
	e := newBackupEndpoint(t, fixtureOptions{podsOnly: true})
	s := startServe(t, "serve", e.url, "--backup-token-file", e.token, "--refresh", "1s")
	if !strings.Contains(s.stderr.String(), "Serving a copy of "+e.url+" (fetched again every 1s)") {
		t.Errorf("stderr: %s", s.stderr.String())
	}
	ctx := context.Background()
	cs := kubernetes.NewForConfigOrDie(s.cfg)
	podCount := func() int {
		pods, err := cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatalf("list pods: %v\nserve: %s", err, s.stderr.String())
		}
		return len(pods.Items)
	}
	if n := podCount(); n != 6 {
		t.Fatalf("%d pods served, want 6", n)
	}
	if _, err := cs.CoreV1().ConfigMaps("ns-000").Get(ctx, "settings", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("a configmap before the process has any: %v", err)
	}
	w, err := cs.CoreV1().Pods("").Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	for range 6 {
		if ev := <-w.ResultChan(); ev.Type != watch.Added {
			t.Fatalf("watch event %v, want ADDED", ev.Type)
		}
	}

	// A refresh that fails: the last good copy stays served, and stderr
	// says why.
	e.broken.Store(true)
	eventually(t, "a refresh fails", func() bool {
		return strings.Contains(s.stderr.String(), "warning: refresh of "+e.url+" failed; still serving the copy fetched at")
	})
	if out := s.stderr.String(); !strings.Contains(out, "the backup received from "+e.url+" is not a valid warmcache file: ") ||
		!strings.Contains(out, "Check that the URL serves bolt.DB.BackupHandler") {
		t.Errorf("the failed refresh does not say why:\n%s", out)
	}
	if n := podCount(); n != 6 {
		t.Errorf("%d pods served after a failed refresh, want the 6 of the last good copy", n)
	}
	select {
	case ev, ok := <-w.ResultChan():
		t.Errorf("the watch got %v (open %v) though no copy replaced its own", ev.Type, ok)
	default:
	}

	// The process caches a new pod and a new resource; the next refresh
	// serves them.
	var pods []interface{}
	for i := range 7 {
		p := podgen.Pod(i)
		p.TypeMeta = metav1.TypeMeta{}
		pods = append(pods, p)
	}
	fill(t, e.db, podsID, codec.Protobuf(nil), cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc, "nodeName": nodeNameIndex}, pods, "7", 500)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns-000", Name: "settings", ResourceVersion: "8"}, Data: map[string]string{"mode": "fast"}}
	fill(t, e.db, bolt.Identity{Version: "v1", Resource: "configmaps", Kind: "ConfigMap"}, codec.Protobuf(nil), nil, []interface{}{cm}, "8", 500)
	e.broken.Store(false)
	eventually(t, "the refreshed copy is served", func() bool { return podCount() == 7 })
	if !strings.Contains(s.stderr.String(), "Refreshed "+e.url+": serving the copy fetched at") {
		t.Errorf("the refresh after a failure is not reported:\n%s", s.stderr.String())
	}
	res, err := discovery.NewDiscoveryClientForConfigOrDie(s.cfg).ServerResourcesForGroupVersion("v1")
	if err != nil || !slices.ContainsFunc(res.APIResources, func(r metav1.APIResource) bool { return r.Name == "configmaps" }) {
		t.Errorf("discovery after the refresh: %v, %+v", err, res)
	}
	if got, err := cs.CoreV1().ConfigMaps("ns-000").Get(ctx, "settings", metav1.GetOptions{}); err != nil || got.Data["mode"] != "fast" {
		t.Errorf("the new configmap: %v", err)
	}
	// The watch of the replaced copy has ended, as an API server's may;
	// one from its resourceVersion is refused as expired, so that the
	// client lists again.
	timeout := time.After(30 * time.Second)
	for open := true; open; {
		select {
		case ev, ok := <-w.ResultChan():
			if open = ok; ok {
				t.Errorf("watch event %v after the stored state", ev.Type)
			}
		case <-timeout:
			t.Fatal("the watch of the replaced copy is still open")
		}
	}
	if _, err := cs.CoreV1().Pods("").Watch(ctx, metav1.ListOptions{ResourceVersion: "6"}); !apierrors.IsResourceExpired(err) && !apierrors.IsGone(err) {
		t.Errorf("a watch from the replaced copy's resourceVersion: %v, want 410 Expired", err)
	}
	if code := s.stop(); code != ExitOK {
		t.Errorf("exit %d on stop:\n%s", code, s.stderr.String())
	}
	if left := entries(t, tmp); len(left) != 0 {
		t.Errorf("left in the temporary directory: %q", left)
	}
	if strings.Contains(s.stderr.String(), backupToken) {
		t.Errorf("stderr holds the token:\n%s", s.stderr.String())
	}
}

// TestServeURLErrors: what serve URL says when it cannot serve a copy, and
// the flags that apply to a URL alone.
func TestServeURLErrors(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	t.Setenv("KUBECONFIG", filepath.Join(t.TempDir(), "no-kubeconfig"))
	e := newBackupEndpoint(t, fixtureOptions{podsOnly: true})
	file := fixture(t, fixtureOptions{podsOnly: true})
	notFound := strings.TrimSuffix(e.url, "/backup") + "/nope"
	tests := []struct {
		name     string
		args     []string
		wantCode int
		want     []string
	}{
		{"nobody listening", []string{"http://127.0.0.1:1/backup"}, ExitError, []string{"fetch http://127.0.0.1:1/backup", "Is the process running"}},
		{"no token", []string{e.url}, ExitError, []string{"HTTP 401", "none was sent: pass --backup-token-file (or --backup-token)"}},
		{"wrong token", []string{e.url, "--backup-token", wrongToken}, ExitError, []string{"HTTP 401", "did not accept the token of --backup-token:"}},
		{"forbidden", []string{e.url, "--backup-token", knownButNoWay}, ExitError, []string{"HTTP 403", `user "someone" may not get /backup`, "may not read the backup"}},
		{"not a backup endpoint", []string{notFound, "--backup-token-file", e.token}, ExitNotFound, []string{"HTTP 404"}},
		{"token over plain HTTP", []string{"http://backup.example.invalid/backup", "--backup-token", backupToken}, ExitUsage, []string{"not sending the token of --backup-token over plain HTTP"}},
		{"refresh of a file", []string{file, "--refresh", "1m"}, ExitUsage, []string{"--refresh applies to a backup URL, not to the file"}},
		{"credential of a file", []string{file, "--backup-token-file", e.token}, ExitUsage, []string{"--backup-token-file applies to a backup URL"}},
		{"refresh too short", []string{e.url, "--refresh", "10ms"}, ExitUsage, []string{"--refresh 10ms is too short"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := run(t, append([]string{"serve"}, tt.args...)...)
			if r.code != tt.wantCode {
				t.Fatalf("exit %d, want %d\n%s", r.code, tt.wantCode, r.stderr)
			}
			for _, want := range tt.want {
				if !strings.Contains(r.stderr, want) {
					t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
				}
			}
			if strings.Contains(r.stdout+r.stderr, backupToken) || strings.Contains(r.stdout, "clusters:") {
				t.Errorf("a token or a kubeconfig in the output:\n%s%s", r.stdout, r.stderr)
			}
			if left := entries(t, tmp); len(left) != 0 {
				t.Errorf("left in the temporary directory: %q", left)
			}
		})
	}
	// A body that is not a cache file: nothing is served, nothing left.
	e.broken.Store(true)
	r := run(t, "serve", e.url, "--backup-token-file", e.token)
	if r.code != ExitCorrupt || !strings.Contains(r.stderr, "the backup received from "+e.url+" is not a valid warmcache file (nothing is served)") {
		t.Errorf("exit %d\n%s", r.code, r.stderr)
	}
	for _, wrong := range []string{tmp, "copy-"} {
		if strings.Contains(r.stderr, wrong) {
			t.Errorf("stderr names the temporary copy (%q):\n%s", wrong, r.stderr)
		}
	}
	if left := entries(t, tmp); len(left) != 0 {
		t.Errorf("left in the temporary directory: %q", left)
	}

	// A process that caches nothing yet: its copy is named for what it
	// is, not by the temporary file.
	empty, err := bolt.Open(context.Background(), filepath.Join(t.TempDir(), "empty.db"), bolt.Options{Sync: bolt.UnsafeNoSync})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = empty.Close() })
	srv := httptest.NewServer(unsafeBackupHandler(t, empty))
	t.Cleanup(srv.Close)
	r = run(t, "serve", srv.URL)
	if r.code != ExitNotFound || !strings.Contains(r.stderr, "the copy of "+srv.URL+" holds no resource to serve") || strings.Contains(r.stderr, tmp) {
		t.Errorf("exit %d\n%s", r.code, r.stderr)
	}
	if left := entries(t, tmp); len(left) != 0 {
		t.Errorf("left in the temporary directory: %q", left)
	}
}

// closeCount is an io.Closer that counts its calls.
type closeCount struct{ n atomic.Int32 }

func (c *closeCount) Close() error {
	c.n.Add(1)
	return nil
}

// testCopy is a served copy answered by h.
func testCopy(h http.Handler) (*servedCopy, *closeCount) {
	cc := &closeCount{}
	ctx, cancel := context.WithCancel(context.Background())
	return &servedCopy{file: cc, handler: h, retiring: ctx, endWatch: cancel, closed: make(chan struct{})}, cc
}

// TestCopySwitch: a switch leaves a request under way on the old copy to
// its end, ends the old copy's watches, sends new requests to the new
// copy, and closes the old one once its last request ends.
func TestCopySwitch(t *testing.T) {
	started, proceed := make(chan struct{}, 2), make(chan struct{})
	old, oldFile := testCopy(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		started <- struct{}{}
		if r.URL.Query().Get("watch") == "true" {
			<-r.Context().Done()
			fmt.Fprint(w, "watch ended")
			return
		}
		<-proceed
		fmt.Fprint(w, "old")
	}))
	next, nextFile := testCopy(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "new") }))
	sw := &copySwitch{}
	sw.swap(old)
	serve := func(target string) <-chan string {
		out := make(chan string, 1)
		go func() {
			rec := httptest.NewRecorder()
			sw.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, target, nil))
			out <- rec.Body.String()
		}()
		return out
	}
	list, watching := serve("/api/v1/pods"), serve("/api/v1/pods?watch=true")
	<-started
	<-started

	if prev := sw.swap(next); prev != old {
		t.Fatal("swap did not return the old copy")
	}
	if got := <-watching; got != "watch ended" {
		t.Errorf("the old copy's watch: %q", got)
	}
	if got := <-serve("/api/v1/pods"); got != "new" {
		t.Errorf("a request after the switch: %q, want the new copy's", got)
	}
	select {
	case <-old.closed:
		t.Fatal("the old copy was closed under a request")
	default:
	}
	close(proceed)
	if got := <-list; got != "old" {
		t.Errorf("the request under way: %q, want the old copy's answer", got)
	}
	<-old.closed
	if n := oldFile.n.Load(); n != 1 || old.closeErr != nil {
		t.Errorf("the old copy closed %d times (%v)", n, old.closeErr)
	}
	sw.swap(nil)
	<-next.closed
	if nextFile.n.Load() != 1 {
		t.Error("the last copy is not closed")
	}
	rec := httptest.NewRecorder()
	sw.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/api", nil))
	if rec.Code != http.StatusServiceUnavailable {
		t.Errorf("a request once stopping: %d", rec.Code)
	}
}
