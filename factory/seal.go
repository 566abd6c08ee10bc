package factory

import (
	"context"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"

	"github.com/warmcache/warmcache/store/bolt"
	"github.com/warmcache/warmcache/store/codec"
	"github.com/warmcache/warmcache/store/seal"
)

// DefaultSensitive returns the resources a factory treats as sensitive
// whatever Options.Sensitive says: core Secrets. It is a function, not a
// variable, so that no package of the process can turn sealing of
// Secrets off for every factory by assigning to it.
func DefaultSensitive() []schema.GroupResource { return []schema.GroupResource{secretsResource} }

// secretsResource is core Secrets' resource.
var secretsResource = schema.GroupResource{Resource: "secrets"}

// WithSealing makes the informer's resource sensitive, as if it were
// listed in Options.Sensitive: its objects are sealed in the file with
// Options.Keys, or, without keys, kept in memory only.
func WithSealing() InformerOption {
	return func(c *informerConfig) { c.sealing = sealOn }
}

// WithUnsafePlaintext stores the informer's objects in the file in
// plaintext even when its resource is sensitive (a Secret's data then
// reaches the disk, its backups and the copies of it moved aside). Use it
// only for a file whose disk is protected otherwise.
func WithUnsafePlaintext() InformerOption {
	return func(c *informerConfig) { c.sealing = sealOff }
}

// sealing is an informer's choice: the factory's default, on or off.
type sealing int

const (
	sealDefault sealing = iota
	sealOn
	sealOff
)

// loadKeys reads the keys of opts.Keys once, at New. An error, or no
// valid key (a provider that breaks its contract: an empty list or a zero
// Key), is logged and leaves the factory without keys: its sensitive
// resources are then kept in memory only, what the file holds of them in
// plaintext is deleted, and the data a correct key sealed stays in the
// file for a later start (see forgetSensitive).
func loadKeys(ctx context.Context, opts Options, logger klog.Logger) []seal.Key {
	if opts.Keys == nil {
		return nil
	}
	keys, err := opts.Keys.Keys(ctx)
	if err == nil {
		keys, err = seal.Static(keys...).Keys(ctx) // at least one key, none zero
	}
	if err != nil {
		logger.Error(err, "Cannot read the encryption keys; sensitive resources (Secrets, Options.Sensitive) are kept in memory only, not persisted")
		return nil
	}
	logger.V(2).Info("Encryption keys loaded; sensitive resources are sealed with the first", "keyIDs", seal.KeyIDs(keys))
	return keys
}

// sensitive reports whether gr's objects must not reach the file in
// plaintext under the informer's choice s.
func (f *Factory) sensitive(gr schema.GroupResource, s sealing) bool {
	switch s {
	case sealOn:
		return true
	case sealOff:
		return false
	}
	return gr == secretsResource || slices.Contains(f.opts.Sensitive, gr)
}

// sealedCodec returns c sealed with the factory's keys, or ok false when
// there are none (the caller keeps the resource in memory only).
func (f *Factory) sealedCodec(c codec.Codec) (codec.Codec, bool, error) {
	if len(f.keys) == 0 {
		return nil, false, nil
	}
	sc, err := seal.NewCodec(c, f.keys)
	if err != nil {
		return nil, false, fmt.Errorf("%w: %w", ErrResource, err)
	}
	return sc, true, nil
}

// forgetSensitive deletes from the file what it holds of the sensitive
// resource id, which the factory keeps in memory because it has no usable
// key: a file written by an earlier version, or with WithUnsafePlaintext,
// holds it in plaintext. Without Options.Keys everything is deleted; when
// Options.Keys is set but gave no key (see loadKeys), data sealed by an
// earlier start is kept for a later start with the key, and only what is
// not sealed is deleted. The deleted pages are freed, not overwritten:
// bbolt reuses them for later writes. An error (a read-only file, a full
// disk) is returned: the informer is not created while plaintext of its
// resource may be left in the file.
func (f *Factory) forgetSensitive(ctx context.Context, id bolt.Identity) error {
	var opts bolt.DropOptions
	if f.opts.Keys != nil {
		opts.Keep = func(recorded string) bool {
			_, sealed := seal.InnerName(recorded)
			return sealed
		}
	}
	dropped, err := f.db.DropResource(ctx, id, opts)
	if err != nil {
		return fmt.Errorf("%w: sensitive resource %s is kept in memory, and what the cache file holds of it cannot be deleted: %w", ErrResource, id, err)
	}
	// Its sample object (sample.go), stored as the resource was.
	droppedSample, err := f.db.DropResource(ctx, sampleIdentity(id), opts)
	if err != nil {
		return fmt.Errorf("%w: sensitive resource %s is kept in memory, and the sample object the cache file holds of it cannot be deleted: %w", ErrResource, id, err)
	}
	if dropped || droppedSample {
		f.logger.Info("Deleted the stored data of a sensitive resource kept in memory (no usable encryption key); delete or compact the file to overwrite its freed pages",
			"resource", id.String())
	}
	return nil
}
