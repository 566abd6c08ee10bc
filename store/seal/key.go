package seal

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strings"
)

// KeySize is the minimum length of key material, in bytes: 256 bits.
const KeySize = 32

// IDSize is the length of a key ID in a sealed payload, in bytes. Its
// String form is twice as many hexadecimal digits.
const IDSize = 8

// Key is one encryption key: an AES-256-GCM key derived from the user's
// key material, and its ID. The ID is derived from the material by a
// one-way function of its own (HKDF-SHA256 with another label), so that it
// can be recorded in the file and printed in logs and by the snapshot CLI
// without revealing anything of the key.
//
// Key is an immutable value, safe for concurrent use. The zero Key is
// invalid.
type Key struct {
	id   [IDSize]byte
	aead cipher.AEAD
}

// HKDF labels: one per derived value, so that the key ID and the cipher
// key are independent.
const (
	labelCipher = "warmcache seal v1 aes-256-gcm key"
	labelID     = "warmcache seal v1 key id"
)

// NewKey derives a key from material, which must hold at least KeySize
// bytes of secret randomness (for example 32 bytes from crypto/rand).
func NewKey(material []byte) (Key, error) {
	if len(material) < KeySize {
		return Key{}, fmt.Errorf("%w: %d bytes of key material, need at least %d", ErrInvalidKey, len(material), KeySize)
	}
	ck, err := hkdf.Key(sha256.New, material, nil, labelCipher, 32)
	if err != nil {
		return Key{}, fmt.Errorf("%w: derive the cipher key: %w", ErrInvalidKey, err)
	}
	idk, err := hkdf.Key(sha256.New, material, nil, labelID, 32)
	if err != nil {
		return Key{}, fmt.Errorf("%w: derive the key ID: %w", ErrInvalidKey, err)
	}
	block, err := aes.NewCipher(ck)
	if err != nil {
		return Key{}, fmt.Errorf("%w: %w", ErrInvalidKey, err)
	}
	aead, err := cipher.NewGCMWithRandomNonce(block)
	if err != nil {
		return Key{}, fmt.Errorf("%w: %w", ErrInvalidKey, err)
	}
	k := Key{aead: aead}
	sum := sha256.Sum256(idk)
	copy(k.id[:], sum[:IDSize])
	return k, nil
}

// ParseKey decodes key material written as standard base64 (with or
// without padding; surrounding white space ignored), as printed by
// `openssl rand -base64 32` or `head -c 32 /dev/urandom | base64`, and
// derives its key. It never echoes the material in its errors.
func ParseKey(text string) (Key, error) {
	text = strings.TrimSpace(text)
	raw, err := base64.StdEncoding.DecodeString(text)
	if err != nil {
		raw, err = base64.RawStdEncoding.DecodeString(text)
	}
	if err != nil {
		return Key{}, fmt.Errorf("%w: not standard base64 (%d characters)", ErrInvalidKey, len(text))
	}
	return NewKey(raw)
}

// ID returns the key's ID: 16 hexadecimal digits, recorded in every
// payload the key seals.
func (k Key) ID() string { return hex.EncodeToString(k.id[:]) }

// KeyIDs returns the IDs of keys, in their order.
func KeyIDs(keys []Key) []string {
	ids := make([]string, len(keys))
	for i, k := range keys {
		ids[i] = k.ID()
	}
	return ids
}

// valid reports whether k was made by NewKey.
func (k Key) valid() bool { return k.aead != nil }
