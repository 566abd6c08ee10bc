package backup

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"

	bbolt "go.etcd.io/bbolt"
	"go.uber.org/goleak"
	"k8s.io/klog/v2/ktesting"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// openFile returns a handler of a bbolt file holding one bucket, and the
// file's path, with the given authorizer and logger.
func openFile(t *testing.T, auth func(*http.Request) (string, error), logger ktesting.TL) (*Handler, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "informers.db")
	db, err := bbolt.Open(path, 0o600, nil)
	must(t, err)
	t.Cleanup(func() { _ = db.Close() })
	must(t, db.Update(func(tx *bbolt.Tx) error {
		b, err := tx.CreateBucket([]byte("pods"))
		if err != nil {
			return err
		}
		return b.Put([]byte("ns/a"), []byte("pod a"))
	}))
	h := &Handler{
		Path:      path,
		View:      db.View,
		Authorize: auth,
		Logger:    ktesting.NewLogger(logger, ktesting.NewConfig(ktesting.Verbosity(1), ktesting.BufferLogs(true))),
	}
	return h, path
}

// logs returns what h logged.
func logs(h *Handler) string { return h.Logger.GetSink().(ktesting.Underlier).GetBuffer().String() }

// TestHandlerAuthorizer checks the answers to what the authorizer decides:
// nothing of the file unless it allows, 401 with a challenge, 403, 500
// without the error's detail, methods other than GET and HEAD refused
// before authorization, and the file with its caller in the download's log
// line.
func TestHandlerAuthorizer(t *testing.T) {
	ctx := context.Background()
	var calls atomic.Int32
	h, path := openFile(t, func(r *http.Request) (string, error) {
		calls.Add(1)
		switch r.Header.Get("Authorization") {
		case "":
			return "", fmt.Errorf("backup test: %w: no bearer token", ErrUnauthenticated)
		case "Bearer stranger":
			return "", fmt.Errorf("backup test: %w: user stranger may not get /backup", ErrForbidden)
		case "Bearer friend":
			return "friend", nil
		}
		return "", errors.New("backup test: apiserver unreachable at 10.0.0.1")
	}, t)
	srv := httptest.NewServer(h)
	defer srv.Close()

	get := func(method, token string) (*http.Response, string) {
		t.Helper()
		req, err := http.NewRequestWithContext(ctx, method, srv.URL, nil)
		must(t, err)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		must(t, err)
		body, err := io.ReadAll(resp.Body)
		must(t, err)
		_ = resp.Body.Close()
		return resp, string(body)
	}
	tests := []struct {
		name, method, token string
		wantStatus          int
		wantBody            string
		wantChallenge       bool
	}{
		{"anonymous", http.MethodGet, "", http.StatusUnauthorized, "no bearer token", true},
		{"anonymous HEAD", http.MethodHead, "", http.StatusUnauthorized, "", true},
		{"unauthorized", http.MethodGet, "stranger", http.StatusForbidden, "user stranger may not get /backup", false},
		{"unauthorized HEAD", http.MethodHead, "stranger", http.StatusForbidden, "", false},
		{"check failed", http.MethodGet, "other", http.StatusInternalServerError, "the authorization check failed", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := get(tt.method, tt.token)
			if resp.StatusCode != tt.wantStatus || !strings.Contains(body, tt.wantBody) {
				t.Errorf("%s = %d %q, want %d %q", tt.method, resp.StatusCode, body, tt.wantStatus, tt.wantBody)
			}
			if ch := resp.Header.Get("WWW-Authenticate"); (ch == `Bearer realm="warmcache backup"`) != tt.wantChallenge {
				t.Errorf("WWW-Authenticate %q, want a challenge: %v", ch, tt.wantChallenge)
			}
			if ct := resp.Header.Get("Content-Type"); ct == "application/octet-stream" {
				t.Errorf("a refused request got the file's headers")
			}
			if strings.Contains(body, "10.0.0.1") {
				t.Errorf("the body names the internal error: %q", body)
			}
		})
	}
	if !strings.Contains(logs(h), "apiserver unreachable at 10.0.0.1") {
		t.Errorf("the failed check is not logged:\n%s", logs(h))
	}

	before := calls.Load()
	if resp, _ := get(http.MethodPost, ""); resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != "GET, HEAD" {
		t.Errorf("POST = %d (Allow %q), want 405 allowing GET, HEAD", resp.StatusCode, resp.Header.Get("Allow"))
	}
	if calls.Load() != before {
		t.Errorf("the authorizer was asked about a POST")
	}

	resp, body := get(http.MethodGet, "friend")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET as friend = %d %q", resp.StatusCode, body)
	}
	if cd := resp.Header.Get("Content-Disposition"); cd != `attachment; filename="informers.db"` {
		t.Errorf("Content-Disposition %q", cd)
	}
	copyPath := filepath.Join(t.TempDir(), "copy.db")
	must(t, os.WriteFile(copyPath, []byte(body), 0o600))
	cp, err := bbolt.Open(copyPath, 0o600, &bbolt.Options{ReadOnly: true})
	must(t, err)
	must(t, cp.View(func(tx *bbolt.Tx) error {
		if b := tx.Bucket([]byte("pods")); b == nil || !bytes.Equal(b.Get([]byte("ns/a")), []byte("pod a")) {
			t.Errorf("the downloaded file of %s lacks pods/ns/a", path)
		}
		return nil
	}))
	must(t, cp.Close())
	if !regexp.MustCompile(`Serving a backup of the cache file .*caller="friend"`).MatchString(logs(h)) {
		t.Errorf("the download's caller is not logged:\n%s", logs(h))
	}
}

// TestHandlerCallerGone checks that a check that fails because the caller
// went away is not logged as a failure.
func TestHandlerCallerGone(t *testing.T) {
	entered := make(chan struct{})
	h, _ := openFile(t, func(r *http.Request) (string, error) {
		close(entered)
		<-r.Context().Done() // the apiserver is slow, the caller gives up
		return "", fmt.Errorf("backup test: TokenReview: %w", r.Context().Err())
	}, t)
	served := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		defer close(served)
		h.ServeHTTP(rw, r)
	}))
	defer srv.Close()

	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
	must(t, err)
	go func() {
		<-entered
		cancel()
	}()
	if resp, err := http.DefaultClient.Do(req); err == nil {
		_ = resp.Body.Close()
		t.Fatalf("the cancelled request got %s", resp.Status)
	}
	<-served
	if strings.Contains(logs(h), "authorization check failed") {
		t.Errorf("a caller that went away is logged as a failed check:\n%s", logs(h))
	}
}

// TestWriteToCancelled checks that a copy whose context is done fails with
// its error.
func TestWriteToCancelled(t *testing.T) {
	h, _ := openFile(t, nil, t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := h.View(func(tx *bbolt.Tx) error {
		_, err := WriteTo(ctx, tx, io.Discard)
		return err
	})
	// bbolt formats the writer's error with %s: only its text remains.
	if err == nil || !strings.Contains(err.Error(), context.Canceled.Error()) {
		t.Fatalf("WriteTo with a cancelled context = %v, want its error", err)
	}
}
