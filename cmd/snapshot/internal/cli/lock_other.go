//go:build !unix

package cli

import (
	"context"
	"os"
	"time"
)

// lockShared does nothing where flock does not exist; bbolt's own lock,
// taken by bolt.Open, still excludes writers.
func lockShared(context.Context, *os.File, time.Duration) error { return nil }
