package bolt

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"
)

// rvPods returns the batch written at rv by TestBackupWhileWriting's
// writer: pods w-0..w-(rv%50) at that rv, so the content at any recorded
// RV is known.
func rvBatch(rv int) []cache.Transaction {
	var txns []cache.Transaction
	for i := range rv%50 + 1 {
		txns = append(txns, cache.Transaction{Type: cache.TransactionTypeUpdate, Object: mkPod("ns", fmt.Sprintf("w-%02d", i), strconv.Itoa(rv))})
	}
	return txns
}

// TestBackupWhileWriting takes backups while a writer applies batches and
// checks that each backup opens, verifies and holds exactly the content of
// the RV it recorded.
func TestBackupWhileWriting(t *testing.T) {
	ctx := context.Background()
	db := openDB(t, tempPath(t), Options{Sync: UnsafeNoSync})
	s := openPods(t, db, namespaceIndexers())
	must(t, s.Apply(ctx, rvBatch(1), "1"))

	stop := make(chan struct{})
	progress := make(chan struct{}, 1)
	var wg sync.WaitGroup
	var writeErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		for rv := 2; ; rv++ {
			select {
			case <-stop:
				return
			default:
			}
			if err := s.Apply(ctx, rvBatch(rv), strconv.Itoa(rv)); err != nil {
				writeErr = err
				close(progress)
				return
			}
			select {
			case progress <- struct{}{}:
			default:
			}
		}
	}()
	for i := range 5 {
		<-progress // a write committed since the last backup
		path := tempPath(t)
		f, err := os.Create(path)
		must(t, err)
		n, err := db.Backup(ctx, f)
		must(t, err)
		must(t, f.Close())
		if fi, err := os.Stat(path); err != nil || fi.Size() != n {
			t.Fatalf("backup %d: wrote %d bytes, file has %v (%v)", i, n, fi.Size(), err)
		}
		checkBackup(t, path)
	}
	close(stop)
	wg.Wait()
	must(t, writeErr)
}

// checkBackup opens a backup and checks it against rvBatch.
func checkBackup(t *testing.T, path string) {
	t.Helper()
	db := openDB(t, path, Options{})
	s := openPods(t, db, namespaceIndexers())
	verifyClean(t, db)
	st := mustState(t, s)
	rv, err := strconv.Atoi(st.RV)
	if err != nil {
		t.Fatalf("backup RV %q: %v", st.RV, err)
	}
	// Every pod w-i with i <= rv%50 was written at rv; the others last
	// at the latest earlier rv that wrote them.
	for _, obj := range s.List() {
		p := obj.(*corev1.Pod)
		var i int
		if _, err := fmt.Sscanf(p.Name, "w-%d", &i); err != nil {
			t.Fatal(err)
		}
		want := rv
		for want%50 < i {
			want--
		}
		if p.ResourceVersion != strconv.Itoa(want) {
			t.Errorf("backup at RV %d: %s has RV %s, want %d", rv, p.Name, p.ResourceVersion, want)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestBackupHandler checks the HTTP handler's headers, body and methods.
func TestBackupHandler(t *testing.T) {
	ctx := context.Background()
	db := openDB(t, tempPath(t), Options{Sync: UnsafeNoSync})
	s := openPods(t, db, namespaceIndexers())
	must(t, s.Apply(ctx, rvBatch(7), "7"))
	handler, err := db.BackupHandler(BackupHandlerOptions{UnsafeNoAuthorization: true})
	must(t, err)
	srv := httptest.NewServer(handler)
	defer srv.Close()

	resp, err := http.Get(srv.URL)
	must(t, err)
	body, err := io.ReadAll(resp.Body)
	must(t, err)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/octet-stream" {
		t.Errorf("GET = %d %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	if cl := resp.Header.Get("Content-Length"); cl != strconv.Itoa(len(body)) {
		t.Errorf("Content-Length %s, body %d bytes", cl, len(body))
	}
	path := tempPath(t)
	must(t, os.WriteFile(path, body, 0o600))
	checkBackup(t, path)

	resp, err = http.Head(srv.URL)
	must(t, err)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.ContentLength != int64(len(body)) {
		t.Errorf("HEAD = %d, length %d", resp.StatusCode, resp.ContentLength)
	}
	resp, err = http.Post(srv.URL, "text/plain", nil)
	must(t, err)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST = %d, want 405", resp.StatusCode)
	}

	// A cancelled backup stops with the context's error.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := db.Backup(cctx, io.Discard); !errors.Is(err, context.Canceled) {
		t.Errorf("Backup with a cancelled context = %v", err)
	}
	must(t, db.Close())
	resp, err = http.Get(srv.URL)
	must(t, err)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("GET after Close = %d, want 503", resp.StatusCode)
	}
}
