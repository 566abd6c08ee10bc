//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package filelock

import "context"

// Open opens the bbolt file at path where flock does not exist: bbolt's
// own lock is the only one, so a writer waits for readers until
// cfg.Timeout (see the package documentation). The file is checked before
// bbolt locks it.
func Open(ctx context.Context, path string, cfg Config) (Opened, error) {
	bdb, err := openChecked(ctx, path, cfg)
	return Opened{DB: bdb}, err
}
