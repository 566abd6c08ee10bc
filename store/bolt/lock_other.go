//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package bolt

import (
	"context"
	"os"

	bbolt "go.etcd.io/bbolt"
	"k8s.io/klog/v2"
)

// openLocked opens the bbolt file at path where flock does not exist:
// bbolt's own lock is the only one, so a writer waits for readers until
// Options.Timeout (see lock.go). The file is checked before bbolt locks
// it.
func openLocked(ctx context.Context, path string, opts Options, _ klog.Logger, out *openResult) (*bbolt.DB, *os.File, error) {
	bdb, err := openChecked(ctx, path, opts, out)
	return bdb, nil, err
}
