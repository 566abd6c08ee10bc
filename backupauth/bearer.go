package backupauth

import (
	"net/http"
	"strings"
)

// bearerToken returns the token of r's "Authorization: Bearer TOKEN"
// header; the scheme is case-insensitive (RFC 7235). It reports false when
// there is no such header or the token is empty.
func bearerToken(r *http.Request) (string, bool) {
	scheme, token, ok := strings.Cut(strings.TrimSpace(r.Header.Get("Authorization")), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	return token, token != ""
}
