package bolt

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
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

// TestBackupHandlerAuthorizer checks that the handler asks the options'
// Authorizer: a request it refuses gets nothing of the file, one it allows
// the file's copy, which opens (internal/backup tests every answer).
func TestBackupHandlerAuthorizer(t *testing.T) {
	ctx := context.Background()
	db := openDB(t, tempPath(t), Options{Sync: UnsafeNoSync})
	s := openPods(t, db, namespaceIndexers())
	must(t, s.Apply(ctx, rvBatch(7), "7"))
	auth := AuthorizerFunc(func(r *http.Request) (string, error) {
		if r.Header.Get("Authorization") == "Bearer friend" {
			return "friend", nil
		}
		return "", fmt.Errorf("backup test: %w: no bearer token", ErrUnauthenticated)
	})
	handler, err := db.BackupHandler(BackupHandlerOptions{Authorizer: auth})
	must(t, err)
	srv := httptest.NewServer(handler)
	defer srv.Close()

	get := func(token string) (*http.Response, []byte) {
		t.Helper()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
		must(t, err)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		must(t, err)
		body, err := io.ReadAll(resp.Body)
		must(t, err)
		_ = resp.Body.Close()
		return resp, body
	}
	if resp, body := get(""); resp.StatusCode != http.StatusUnauthorized || len(body) > 100 {
		t.Errorf("GET without a token = %d with %d bytes, want 401 and no file", resp.StatusCode, len(body))
	}
	resp, body := get("friend")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET as friend = %d %q", resp.StatusCode, body)
	}
	path := tempPath(t)
	must(t, os.WriteFile(path, body, 0o600))
	checkBackup(t, path)
}
