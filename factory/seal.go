package factory

import (
	"context"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"

	"github.com/warmcache/warmcache/store/codec"
	"github.com/warmcache/warmcache/store/seal"
)

// DefaultSensitive are the resources a factory treats as sensitive
// whatever Options.Sensitive says: core Secrets.
var DefaultSensitive = []schema.GroupResource{{Resource: "secrets"}}

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

// loadKeys reads the keys of opts.Keys once, at New. An error is logged
// and leaves the factory without keys: its sensitive resources are then
// kept in memory only, and the data a correct key sealed stays in the file
// for a later start.
func loadKeys(ctx context.Context, opts Options, logger klog.Logger) []seal.Key {
	if opts.Keys == nil {
		return nil
	}
	keys, err := opts.Keys.Keys(ctx)
	if err != nil {
		logger.Error(err, "Cannot read the encryption keys; sensitive resources (Secrets, Options.Sensitive) are kept in memory only, not persisted")
		return nil
	}
	ids := make([]string, len(keys))
	for i, k := range keys {
		ids[i] = k.ID()
	}
	logger.V(2).Info("Encryption keys loaded; sensitive resources are sealed with the first", "keyIDs", ids)
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
	return slices.Contains(DefaultSensitive, gr) || slices.Contains(f.opts.Sensitive, gr)
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
