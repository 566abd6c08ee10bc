package bolt

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"

	"k8s.io/klog/v2/ktesting"
)

// TestBackupHandlerOptions checks that a handler without an authorizer is
// refused unless the unsafe opt-out is explicit, and that the opt-out is
// logged.
func TestBackupHandlerOptions(t *testing.T) {
	allow := AuthorizerFunc(func(*http.Request) (string, error) { return "x", nil })
	tests := []struct {
		name    string
		opts    BackupHandlerOptions
		wantErr error
		wantLog string
	}{
		{"no authorizer", BackupHandlerOptions{}, ErrInvalidOptions, ""},
		{"both", BackupHandlerOptions{Authorizer: allow, UnsafeNoAuthorization: true}, ErrInvalidOptions, ""},
		{"authorizer", BackupHandlerOptions{Authorizer: allow}, nil, ""},
		{"unsafe", BackupHandlerOptions{UnsafeNoAuthorization: true}, nil, "WARNING: the backup handler serves the cache file, every cached object included, to any request"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.BufferLogs(true)))
			db := openDB(t, tempPath(t), Options{Sync: UnsafeNoSync, Logger: logger})
			h, err := db.BackupHandler(tt.opts)
			if !errors.Is(err, tt.wantErr) || (err == nil) != (h != nil) {
				t.Fatalf("BackupHandler = %v, %v; want error %v", h, err, tt.wantErr)
			}
			logs := logger.GetSink().(ktesting.Underlier).GetBuffer().String()
			if tt.wantLog != "" && !strings.Contains(logs, tt.wantLog) {
				t.Errorf("log lacks %q:\n%s", tt.wantLog, logs)
			}
			if tt.wantLog == "" && strings.Contains(logs, "WARNING") {
				t.Errorf("unexpected warning:\n%s", logs)
			}
		})
	}
}

// TestBackupHandlerAuthorizer checks the answers to what the authorizer
// decides: nothing of the file unless it allows, 401 with a challenge, 403,
// 500 without the error's detail, and the caller in the download's log line.
func TestBackupHandlerAuthorizer(t *testing.T) {
	ctx := context.Background()
	logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.Verbosity(1), ktesting.BufferLogs(true)))
	logs := func() string { return logger.GetSink().(ktesting.Underlier).GetBuffer().String() }
	db := openDB(t, tempPath(t), Options{Sync: UnsafeNoSync, Logger: logger})
	s := openPods(t, db, namespaceIndexers())
	must(t, s.Apply(ctx, rvBatch(7), "7"))

	var calls atomic.Int32
	auth := AuthorizerFunc(func(r *http.Request) (string, error) {
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
	})
	handler, err := db.BackupHandler(BackupHandlerOptions{Authorizer: auth})
	must(t, err)
	srv := httptest.NewServer(handler)
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
	if !strings.Contains(logs(), "apiserver unreachable at 10.0.0.1") {
		t.Errorf("the failed check is not logged:\n%s", logs())
	}

	// A method the handler does not serve is refused before authorization.
	before := calls.Load()
	if resp, _ := get(http.MethodPost, ""); resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST = %d, want 405", resp.StatusCode)
	}
	if calls.Load() != before {
		t.Errorf("the authorizer was asked about a POST")
	}

	resp, body := get(http.MethodGet, "friend")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET as friend = %d %q", resp.StatusCode, body)
	}
	path := tempPath(t)
	must(t, os.WriteFile(path, []byte(body), 0o600))
	checkBackup(t, path)
	if !regexp.MustCompile(`Serving a backup of the cache file .*caller="friend"`).MatchString(logs()) {
		t.Errorf("the download's caller is not logged:\n%s", logs())
	}
}

// TestBackupHandlerCallerGone checks that a check that fails because the
// caller went away is not logged as a failure.
func TestBackupHandlerCallerGone(t *testing.T) {
	logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.BufferLogs(true)))
	db := openDB(t, tempPath(t), Options{Sync: UnsafeNoSync, Logger: logger})
	entered := make(chan struct{})
	auth := AuthorizerFunc(func(r *http.Request) (string, error) {
		close(entered)
		<-r.Context().Done() // the apiserver is slow, the caller gives up
		return "", fmt.Errorf("backup test: TokenReview: %w", r.Context().Err())
	})
	handler, err := db.BackupHandler(BackupHandlerOptions{Authorizer: auth})
	must(t, err)
	served := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		defer close(served)
		handler.ServeHTTP(rw, r)
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
	if logs := logger.GetSink().(ktesting.Underlier).GetBuffer().String(); strings.Contains(logs, "authorization check failed") {
		t.Errorf("a caller that went away is logged as a failed check:\n%s", logs)
	}
}
