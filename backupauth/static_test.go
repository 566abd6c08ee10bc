package backupauth

import (
	"errors"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/warmcache/warmcache/store/bolt"
)

const staticSecret = "0123456789abcdef-secret"

func TestStaticTokenOptions(t *testing.T) {
	for _, token := range []string{"", "short", " " + staticSecret, staticSecret + "\n"} {
		if _, err := StaticToken(token); !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("StaticToken(%q) = %v, want ErrInvalidOptions", token, err)
		} else if token != "" && strings.Contains(err.Error(), strings.TrimSpace(token)) {
			t.Errorf("the error holds the token: %v", err)
		}
	}
}

func TestStaticToken(t *testing.T) {
	auth, err := StaticToken(staticSecret)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		header  string
		wantErr error
	}{
		{"no header", "", bolt.ErrUnauthenticated},
		{"basic", "Basic " + staticSecret, bolt.ErrUnauthenticated},
		{"empty bearer", "Bearer ", bolt.ErrUnauthenticated},
		{"wrong token", "Bearer 0123456789abcdef-secreT", bolt.ErrUnauthenticated},
		{"prefix of the token", "Bearer " + staticSecret[:len(staticSecret)-1], bolt.ErrUnauthenticated},
		{"token and more", "Bearer " + staticSecret + "x", bolt.ErrUnauthenticated},
		{"right token", "Bearer " + staticSecret, nil},
		{"scheme in lower case", "bearer " + staticSecret, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/backup", nil)
			if tt.header != "" {
				r.Header.Set("Authorization", tt.header)
			}
			caller, err := auth.Authorize(r)
			if !errors.Is(err, tt.wantErr) || (err == nil) != (tt.wantErr == nil) {
				t.Fatalf("Authorize = %q, %v; want %v", caller, err, tt.wantErr)
			}
			if err == nil && caller != StaticCaller {
				t.Errorf("caller %q, want %q", caller, StaticCaller)
			}
			if err != nil && strings.Contains(err.Error(), "0123456789") {
				t.Errorf("the error holds a token: %v", err)
			}
		})
	}
}
