package backupauth

import (
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"net/http"
	"strings"

	"github.com/warmcache/warmcache/store/bolt"
)

// MinStaticTokenLength is the shortest token StaticToken accepts, in bytes.
const MinStaticTokenLength = 16

// StaticCaller is the caller name the authorizer of StaticToken gives the
// handler's log line for a request it allows.
const StaticCaller = "static token"

// StaticToken returns an authorizer that allows the requests whose
// "Authorization: Bearer" header holds token, compared in constant time.
// Anything else is refused as not authenticated (401): there is no user to
// refuse with 403. token must be at least MinStaticTokenLength bytes
// without surrounding white space (read from a file, trim it first);
// generate it with, for example, `head -c 32 /dev/urandom | base64`.
//
// Anyone holding the token can read every cached object: keep it in a
// Secret, and rotate it by restarting with a new one.
func StaticToken(token string) (bolt.Authorizer, error) {
	switch {
	case len(token) < MinStaticTokenLength:
		return nil, fmt.Errorf("%w: static token is %d bytes, want at least %d", ErrInvalidOptions, len(token), MinStaticTokenLength)
	case strings.TrimSpace(token) != token:
		return nil, fmt.Errorf("%w: static token has leading or trailing white space", ErrInvalidOptions)
	}
	return &static{sum: sha256.Sum256([]byte(token))}, nil
}

// static holds the hash of the token only: comparing hashes of equal
// length in constant time reveals neither the token's bytes nor its length.
type static struct {
	sum [sha256.Size]byte
}

func (s *static) Authorize(r *http.Request) (string, error) {
	token, ok := bearerToken(r)
	if !ok {
		return "", fmt.Errorf("backupauth: %w: no bearer token in the Authorization header", bolt.ErrUnauthenticated)
	}
	sum := sha256.Sum256([]byte(token))
	if subtle.ConstantTimeCompare(sum[:], s.sum[:]) != 1 {
		return "", fmt.Errorf("backupauth: %w: the bearer token is not the backup endpoint's token", bolt.ErrUnauthenticated)
	}
	return StaticCaller, nil
}
