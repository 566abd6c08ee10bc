package seal

import (
	"context"
	"fmt"
	"os"
	"strings"
)

// KeyProvider supplies the keys of sealed resources. Keys returns at least
// one key: the first seals every new write, and every key opens what it
// sealed, so that a key is rotated by putting the new key first and
// keeping the old one until the data it sealed has been rewritten (see
// the package documentation).
//
// Keys is called when a factory is created (package factory); an error
// there means no sealed resource is persisted. Implementations must be
// safe for concurrent use.
type KeyProvider interface {
	Keys(ctx context.Context) ([]Key, error)
}

// Static returns a provider of keys, in that order.
func Static(keys ...Key) KeyProvider { return staticKeys(keys) }

type staticKeys []Key

func (s staticKeys) Keys(context.Context) ([]Key, error) {
	return checkKeys("static keys", s)
}

// FromFile returns a provider that reads the file at path on every call
// to Keys: one base64 key per line (see ParseKey), the first line the key
// that seals new writes; empty lines and lines starting with '#' are
// ignored. A key of a mounted Kubernetes Secret is such a file: its value
// is the base64 text, for example
//
//	kubectl create secret generic my-controller-cache-key \
//	  --from-literal=keys="$(openssl rand -base64 32)"
//
// mounted at /etc/warmcache/keys: FromFile("/etc/warmcache/keys").
func FromFile(path string) KeyProvider { return fileKeys(path) }

type fileKeys string

func (p fileKeys) Keys(context.Context) ([]Key, error) {
	b, err := os.ReadFile(string(p))
	if err != nil {
		return nil, fmt.Errorf("seal: key file: %w", err)
	}
	return parseKeys(fmt.Sprintf("key file %s", string(p)), strings.Split(string(b), "\n"))
}

// FromEnv returns a provider that reads the environment variable name on
// every call to Keys: base64 keys (see ParseKey) separated by commas or
// white space, the first the key that seals new writes. In a pod, set it
// from a Secret with valueFrom.secretKeyRef.
func FromEnv(name string) KeyProvider { return envKeys(name) }

type envKeys string

func (p envKeys) Keys(context.Context) ([]Key, error) {
	v, ok := os.LookupEnv(string(p))
	if !ok {
		return nil, fmt.Errorf("%w: environment variable %s is not set", ErrInvalidKey, string(p))
	}
	return parseKeys(fmt.Sprintf("environment variable %s", string(p)), strings.FieldsFunc(v, func(r rune) bool {
		return r == ',' || r == ' ' || r == '\t' || r == '\n' || r == '\r'
	}))
}

// parseKeys parses one key per element of lines, skipping blank and
// comment lines.
func parseKeys(source string, lines []string) ([]Key, error) {
	var keys []Key
	for i, line := range lines {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, err := ParseKey(line)
		if err != nil {
			return nil, fmt.Errorf("seal: %s: key %d: %w", source, i+1, err)
		}
		keys = append(keys, k)
	}
	return checkKeys(source, keys)
}

// checkKeys returns keys without duplicates, or an error if there is none
// or one is invalid.
func checkKeys(source string, keys []Key) ([]Key, error) {
	if len(keys) == 0 {
		return nil, fmt.Errorf("seal: %s: %w: no key", source, ErrInvalidKey)
	}
	out := make([]Key, 0, len(keys))
	seen := map[[IDSize]byte]bool{}
	for i, k := range keys {
		if !k.valid() {
			return nil, fmt.Errorf("seal: %s: key %d: %w: zero Key (use NewKey or ParseKey)", source, i+1, ErrInvalidKey)
		}
		if !seen[k.id] {
			seen[k.id] = true
			out = append(out, k)
		}
	}
	return out, nil
}
