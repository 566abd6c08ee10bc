package cli

import (
	"context"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/warmcache/warmcache/backupauth"
	"github.com/warmcache/warmcache/store/bolt"
)

const (
	backupToken   = "the-backup-token-0123456789"
	wrongToken    = "a-wrong-token-9876543210"
	knownButNoWay = "a-known-token-without-permission"
)

// writeKubeconfig writes a kubeconfig whose current context "ops" has a
// user authenticating with user (YAML lines under "user:").
func writeKubeconfig(t *testing.T, user string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	cfg := `apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: "https://192.0.2.1:6443"}
users:
- name: u
  user:
` + user + `
contexts:
- name: ops
  context: {cluster: c, user: u}
current-context: ops
`
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestBackupToken checks which token `snapshot backup` sends, from
// --token, --token-file, or the kubeconfig, what it says on 401 and 403,
// and that it never prints a token.
func TestBackupToken(t *testing.T) {
	// No kubeconfig unless a case gives one: not the machine's.
	t.Setenv("KUBECONFIG", filepath.Join(t.TempDir(), "no-kubeconfig"))
	src := fixture(t, fixtureOptions{})
	db, err := bolt.Open(context.Background(), src, bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	static, err := backupauth.StaticToken(backupToken)
	if err != nil {
		t.Fatal(err)
	}
	// /forbidden knows a token whose user may not read the file.
	forbidding := bolt.AuthorizerFunc(func(r *http.Request) (string, error) {
		if r.Header.Get("Authorization") == "Bearer "+knownButNoWay {
			return "", fmt.Errorf("test: %w: user %q may not get /forbidden", bolt.ErrForbidden, "someone")
		}
		return static.Authorize(r)
	})
	mux := http.NewServeMux()
	for path, auth := range map[string]bolt.Authorizer{"/backup": static, "/forbidden": forbidding} {
		h, err := db.BackupHandler(bolt.BackupHandlerOptions{Authorizer: auth})
		if err != nil {
			t.Fatal(err)
		}
		mux.Handle(path, h)
	}
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	tlsSrv := httptest.NewUnstartedServer(mux)
	tlsSrv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshake of "https, unknown CA"
	tlsSrv.StartTLS()
	t.Cleanup(tlsSrv.Close)

	dir := t.TempDir()
	file := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	goodFile, wrongFile, emptyFile := file("good", backupToken+"\n"), file("wrong", wrongToken), file("empty", "\n")
	caFile := file("ca.crt", string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: tlsSrv.Certificate().Raw})))
	notCA := file("not-ca.crt", "not a certificate")
	goodKubeconfig := writeKubeconfig(t, "    token: "+backupToken)
	tokenFileKubeconfig := writeKubeconfig(t, "    tokenFile: "+goodFile)
	wrongKubeconfig := writeKubeconfig(t, "    token: "+wrongToken)
	certKubeconfig := writeKubeconfig(t, "    client-certificate-data: Zm9v\n    client-key-data: YmFy")
	// An exec credential plugin (as for EKS, GKE or OIDC logins) that
	// prints the token.
	plugin := file("plugin.sh", "#!/bin/sh\necho '{\"apiVersion\": \"client.authentication.k8s.io/v1\", \"kind\": \"ExecCredential\", \"status\": {\"token\": \""+backupToken+"\"}}'\n")
	if err := os.Chmod(plugin, 0o700); err != nil {
		t.Fatal(err)
	}
	execKubeconfig := writeKubeconfig(t, "    exec: {apiVersion: client.authentication.k8s.io/v1, command: "+plugin+", interactiveMode: Never}")

	url := srv.URL + "/backup"
	tests := []struct {
		name       string
		env        string // KUBECONFIG, when set
		args       []string
		wantCode   int
		wantStderr []string
	}{
		{"no token", "", []string{url}, ExitError, []string{"HTTP 401 Unauthorized", "no bearer token", "requires a bearer token, and none was sent: pass --token-file"}},
		{"wrong token", "", []string{url, "--token", wrongToken}, ExitError, []string{"HTTP 401", "did not accept the token of --token:"}},
		{"wrong token file", "", []string{url, "--token-file", wrongFile}, ExitError, []string{"HTTP 401", "did not accept the token of --token-file " + wrongFile}},
		{"token", "", []string{url, "--token", backupToken}, ExitOK, nil},
		{"token file", "", []string{url, "--token-file", goodFile}, ExitOK, nil},
		{"token file over the kubeconfig", wrongKubeconfig, []string{url, "--token-file", goodFile}, ExitOK, nil},
		{"kubeconfig", "", []string{url, "--kubeconfig", goodKubeconfig}, ExitOK, nil},
		{"kubeconfig token file", tokenFileKubeconfig, []string{url}, ExitOK, nil},
		{"kubeconfig exec plugin", execKubeconfig, []string{url}, ExitOK, nil},
		{"wrong kubeconfig token", wrongKubeconfig, []string{url}, ExitError, []string{"HTTP 401", `did not accept the token of kubeconfig context "ops"`}},
		{"kubeconfig without a token", certKubeconfig, []string{url}, ExitError, []string{"HTTP 401", "none was sent"}},
		{"missing kubeconfig", "", []string{url, "--kubeconfig", filepath.Join(dir, "nope")}, ExitNotFound, []string{"load the kubeconfig for its token"}},
		{"unknown context", "", []string{url, "--kubeconfig", goodKubeconfig, "--context", "nope"}, ExitError, []string{"load the kubeconfig for its token", "nope"}},
		{"forbidden", "", []string{srv.URL + "/forbidden", "--token", knownButNoWay}, ExitError, []string{"HTTP 403 Forbidden", `user "someone" may not get /forbidden`, "may not read the backup", `nonResourceURLs: ["/forbidden"]`}},
		{"both token flags", "", []string{url, "--token", backupToken, "--token-file", goodFile}, ExitUsage, []string{"--token and --token-file are exclusive"}},
		{"empty token file", "", []string{url, "--token-file", emptyFile}, ExitUsage, []string{"is empty"}},
		{"token over plain HTTP", "", []string{"http://backup.example.invalid/backup", "--token", backupToken}, ExitUsage, []string{"not sending the token of --token over plain HTTP to backup.example.invalid", "https://"}},
		{"kubeconfig token over plain HTTP", goodKubeconfig, []string{"http://192.0.2.1:8080/backup"}, ExitUsage, []string{`not sending the token of kubeconfig context "ops" over plain HTTP`}},
		{"token over plain HTTP, unsafe", "", []string{"http://backup.example.invalid/backup", "--token", backupToken, "--unsafe-token-over-http"}, ExitError, []string{"Is the process running"}},
		{"https", "", []string{tlsSrv.URL + "/backup", "--token-file", goodFile, "--certificate-authority", caFile}, ExitOK, nil},
		{"https, unknown CA", "", []string{tlsSrv.URL + "/backup", "--token-file", goodFile}, ExitError, []string{"certificate"}},
		{"https, not a CA file", "", []string{tlsSrv.URL + "/backup", "--token-file", goodFile, "--certificate-authority", notCA}, ExitUsage, []string{"holds no PEM certificate"}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.env != "" {
				t.Setenv("KUBECONFIG", tt.env)
			}
			out := filepath.Join(t.TempDir(), fmt.Sprintf("copy-%d.db", i))
			r := run(t, append([]string{"backup", "--output", out}, tt.args...)...)
			if r.code != tt.wantCode {
				t.Fatalf("exit %d, want %d\n%s%s", r.code, tt.wantCode, r.stdout, r.stderr)
			}
			for _, want := range tt.wantStderr {
				if !strings.Contains(r.stderr, want) {
					t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
				}
			}
			for _, secret := range []string{backupToken, wrongToken, knownButNoWay} {
				if strings.Contains(r.stdout+r.stderr, secret) {
					t.Errorf("the output holds a token:\n%s%s", r.stdout, r.stderr)
				}
			}
			_, err := os.Stat(out)
			if (err == nil) != (tt.wantCode == ExitOK) {
				t.Errorf("output file exists: %v, want %v", err == nil, tt.wantCode == ExitOK)
			}
			if tt.wantCode == ExitOK {
				if v := run(t, "verify", out); v.code != ExitOK {
					t.Errorf("verify of the copy: exit %d\n%s", v.code, v.stdout)
				}
			}
		})
	}
}
