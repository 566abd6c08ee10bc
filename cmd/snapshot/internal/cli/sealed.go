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
			return nil, fmt.Errorf("%w (codec %s) and no --key-file was given", errSealed, name)
		}
		return seal.NewCodec(c, keys)
	}
}

// keysHint is the hint of an error of ErrKey.
const keysHint = "Give --key-file the keys of the controller that wrote the file (its key file: one base64 key per line);\n" +
	"without them names, labels, resourceVersions and index values still show (list -o name, index, info)."

// isSealed reports whether the resource's objects are sealed (encrypted).
func isSealed(info inspect.ResourceInfo) bool {
	_, ok := seal.InnerName(info.Codec)
	return ok
}

// heldKeys returns the IDs of the keys of --key-file that open the sealed
// resource info: none without --key-file.
func (f *snapshotFile) heldKeys(info inspect.ResourceInfo) []string {
	c, err := f.codecs(info.Codec)
	if err != nil {
		return nil
	}
	if sc, ok := c.(*seal.Codec); ok {
		return sc.KeyIDs()
	}
	return nil
}

// keyCheck is what checkKeys found of a sealed resource: the IDs of the
// keys that sealed its objects and --key-file does not hold.
type keyCheck struct {
	// missing are the key IDs, sorted; held those of --key-file.
	missing, held []string
	// unreadable is the number of objects sealed with a missing key,
	// objects the number the resource holds.
	unreadable, objects int64
}

// checkKeys reads the key ID of every object of the sealed resource info
// (from the payloads' headers, without a key) and returns an error
// matching ErrKey when --key-file opens none of them: no --key-file, or
// one without the key that sealed them. When it opens some (a rotation
// under way), the others are reported object by object (see keyErrorOf).
// A resource that is not sealed, or holds no objects, passes.
func (f *snapshotFile) checkKeys(ctx context.Context, info inspect.ResourceInfo) error {
	if !isSealed(info) {
		return nil
	}
	k, err := f.keys(ctx, info)
	if err != nil {
		return err
	}
	if k.unreadable == 0 || k.unreadable < k.objects {
		return nil
	}
	return withHint(mark(ErrKey, "%s", k.describe(displayName(info))), keysHint)
}

// keys returns (and remembers) the key check of the sealed resource info.
func (f *snapshotFile) keys(ctx context.Context, info inspect.ResourceInfo) (keyCheck, error) {
	id := info.Identity.String()
	if k, ok := f.keyChecks[id]; ok {
		return k, nil
	}
	counts, err := inspect.SealKeys(ctx, f.db, f.recordedID(info))
	if err != nil {
		return keyCheck{}, fmt.Errorf("keys of %s: %w", displayName(info), err)
	}
	k := keyCheck{held: f.heldKeys(info)}
	for kid, n := range counts {
		k.objects += n
		if !slices.Contains(k.held, kid) {
			k.missing = append(k.missing, kid)
			k.unreadable += n
		}
	}
	slices.Sort(k.missing)
	f.keyChecks[id] = k
	return k, nil
}

// describe says why what (the objects of a resource: "secrets", "2
// objects of secrets") cannot be decrypted: "cannot decrypt secrets: key
// ID 0123456789abcdef is not in --key-file (it holds fedcba9876543210)".
func (k keyCheck) describe(what string) string {
	resource := what
	if len(k.missing) == 0 {
		// Not seen by the check: written since, or the check did not run.
		return fmt.Sprintf("cannot decrypt %s: sealed with a key --key-file does not hold", resource)
	}
	if len(k.held) == 0 {
		return fmt.Sprintf("cannot decrypt %s: sealed with key ID %s and no --key-file was given",
			resource, strings.Join(k.missing, ", "))
	}
	ids := "key ID " + k.missing[0] + " is"
	if len(k.missing) > 1 {
		ids = "key IDs " + strings.Join(k.missing, ", ") + " are"
	}
	return fmt.Sprintf("cannot decrypt %s: %s not in --key-file (it holds %s)", resource, ids, strings.Join(k.held, ", "))
}

// isKeyError reports whether err is an object's payload sealed with a key
// --key-file does not hold.
func isKeyError(err error) bool { return errors.Is(err, seal.ErrUnknownKey) }

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
	c.bar.Add(1)
	obj, err := c.bound.DecodeBound(data, ad)
	if err == nil {
		c.decoded.Add(1)
	}
	return obj, err
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
	counts, err := inspect.SealKeys(ctx, f.db, f.recordedID(info))
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
