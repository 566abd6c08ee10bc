package cli

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/warmcache/warmcache/cmd/snapshot/internal/progress"
	"github.com/warmcache/warmcache/store/bolt/inspect"
	"github.com/warmcache/warmcache/store/codec"
	"github.com/warmcache/warmcache/store/seal"
)

// errSealed is returned when reading the objects of a sealed resource
// without a key (--key-file): its payloads are ciphertext, never printed
// as data.
var errSealed = errors.New("objects are encrypted")

// loadKeys reads the keys of --key-file, none without it.
func loadKeys(ctx context.Context, path string) ([]seal.Key, error) {
	if path == "" {
		return nil, nil
	}
	keys, err := seal.FromFile(path).Keys(ctx)
	if err != nil {
		return nil, withHint(mark(ErrUsage, "--key-file: %v", err),
			"Give the file a controller reads its keys from: one base64 key per line (see package store/seal).")
	}
	return keys, nil
}

// codecResolver returns the codec of a recorded codec name: store/codec's
// with client-go's kubernetes scheme, sealed with keys for a sealed
// resource; a sealed resource without keys returns errSealed.
func codecResolver(keys []seal.Key) func(name string) (codec.Codec, error) {
	return func(name string) (codec.Codec, error) {
		inner, sealed := seal.InnerName(name)
		if !sealed {
			return resolveCodec(name)
		}
		c, err := resolveCodec(inner)
		if err != nil {
			return nil, err
		}
		if len(keys) == 0 {
			return nil, fmt.Errorf("%w (codec %s): give --key-file to decrypt them", errSealed, name)
		}
		return seal.NewCodec(c, keys)
	}
}

// sealedHint is the hint of errSealed.
const sealedHint = "The resource is sealed (encrypted): its keys, resourceVersions, labels and index values show without a key;\n" +
	"give --key-file with the key file the controller uses to read its objects."

// countingBound is countingCodec for a codec.Bound: Verify decodes sealed
// payloads with their item's additional data.
type countingBound struct {
	countingCodec
	bound codec.Bound
}

func (c countingBound) EncodeBound(dst []byte, obj runtime.Object, ad []byte) ([]byte, error) {
	return c.bound.EncodeBound(dst, obj, ad)
}

func (c countingBound) DecodeBound(data, ad []byte) (runtime.Object, error) {
	c.decoded.Add(1)
	c.bar.Add(1)
	return c.bound.DecodeBound(data, ad)
}

// counting wraps c so that Verify's progress counts its decodes.
func counting(c codec.Codec, decoded *atomic.Int64, bar *progress.Bar) codec.Codec {
	cc := countingCodec{Codec: c, decoded: decoded, bar: bar}
	if b, ok := c.(codec.Bound); ok {
		return countingBound{countingCodec: cc, bound: b}
	}
	return cc
}

// sealedInfo is what info reports of a sealed resource: the objects per
// key that sealed them, read from the payloads' headers without a key,
// and whether --key-file holds every one of those keys.
type sealedInfo struct {
	Cipher   string     `json:"cipher"`
	Keys     []keyCount `json:"keys"`
	Readable bool       `json:"readable"`
}

type keyCount struct {
	ID      string `json:"id"`
	Objects int64  `json:"objects"`
}

// sealedInfo returns the sealing of resource info, nil if it is not
// sealed.
func (f *snapshotFile) sealedInfo(ctx context.Context, info inspect.ResourceInfo) (*sealedInfo, error) {
	if _, ok := seal.InnerName(info.Codec); !ok {
		return nil, nil
	}
	counts, err := inspect.SealKeys(ctx, f.db, info.Identity)
	if err != nil {
		return nil, fmt.Errorf("keys of %s: %w", displayName(info), err)
	}
	// The keys of the codec that reads the objects: none without
	// --key-file.
	var held []string
	if c, err := f.codecs(info.Codec); err == nil {
		if sc, ok := c.(*seal.Codec); ok {
			held = sc.KeyIDs()
		}
	}
	out := &sealedInfo{Cipher: "AES-256-GCM", Keys: []keyCount{}, Readable: len(held) > 0}
	for id, n := range counts {
		out.Keys = append(out.Keys, keyCount{ID: id, Objects: n})
		if !slices.Contains(held, id) {
			out.Readable = false
		}
	}
	slices.SortFunc(out.Keys, func(a, b keyCount) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}

// sealedText is the text form of s.
func sealedText(s *sealedInfo) string {
	parts := make([]string, len(s.Keys))
	for i, k := range s.Keys {
		parts[i] = fmt.Sprintf("%s: %d", k.ID, k.Objects)
	}
	keys := "no objects"
	if len(parts) > 0 {
		keys = "objects per key " + strings.Join(parts, ", ")
	}
	readable := "readable with --key-file"
	if !s.Readable {
		readable = "objects not readable without --key-file holding every key listed"
	}
	return fmt.Sprintf("%s, %s (%s)", s.Cipher, keys, readable)
}
