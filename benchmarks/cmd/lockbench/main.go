// Command lockbench measures what a running inspection costs a controller
// that opens the same cache file: the time of a read-write bolt.Open of a
// file of n podgen pods, alone and while a read-only DB (what the snapshot
// command opens) holds the file. With a reader, the writer copies the file
// over before opening it (see store/bolt's lock.go); without one, it opens
// it in place.
//
// Usage:
//
//	go run ./benchmarks/cmd/lockbench [-n 100000] [-dir DIR] [-runs 3] [-keep]
//
// The file (DIR/lockbench.db) is written first, unless -keep finds one
// from an earlier run, and removed at the end unless -keep is given. The
// reader and the writer run in this process; flock treats them as it would
// two processes. Results go to stdout, progress to stderr. Exit status: 0
// on success, 1 if a measurement failed, 2 for bad flags.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"k8s.io/client-go/tools/cache"

	"github.com/warmcache/warmcache/benchmarks/internal/cmdrun"
	"github.com/warmcache/warmcache/benchmarks/internal/storebench"
	"github.com/warmcache/warmcache/internal/podgen"
	"github.com/warmcache/warmcache/store/bolt"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

// options are the command's flags.
type options struct {
	n, runs int
	dir     string
	keep    bool
}

func parse(args []string, stderr io.Writer) (options, error) {
	fl := cmdrun.FlagSet("lockbench", stderr)
	var o options
	fl.IntVar(&o.n, "n", 100000, "number of pods in the file")
	fl.IntVar(&o.runs, "runs", 3, "measurements of each case")
	fl.StringVar(&o.dir, "dir", os.TempDir(), "directory of the file")
	fl.BoolVar(&o.keep, "keep", false, "reuse the file of an earlier run with -keep, and keep it")
	if err := cmdrun.Parse(fl, args); err != nil {
		return o, err
	}
	if o.n <= 0 || o.runs <= 0 {
		return o, fmt.Errorf("%w: -n and -runs must be positive", cmdrun.ErrUsage)
	}
	return o, nil
}

func run(args []string, stdout, stderr io.Writer) int {
	return cmdrun.Run("lockbench", args, stderr, parse, func(ctx context.Context, o options) error {
		return measure(ctx, o, stdout, stderr)
	})
}

func measure(ctx context.Context, o options, stdout, stderr io.Writer) error {
	path := filepath.Join(o.dir, "lockbench.db")
	if _, err := os.Stat(path); !o.keep || errors.Is(err, fs.ErrNotExist) {
		if err := bolt.Remove(path); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "writing %d pods to %s\n", o.n, path)
		if err := write(ctx, path, o.n); err != nil {
			return err
		}
	}
	if !o.keep {
		defer func() { _ = bolt.Remove(path) }()
	}
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "file: %d pods, %.1f MB\n", o.n, float64(fi.Size())/1e6)
	for i := range o.runs {
		alone, err := timeOpen(ctx, path, false)
		if err != nil {
			return err
		}
		shared, err := timeOpen(ctx, path, true)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "run %d: read-write Open alone %v, beside a reader %v\n", i+1, alone.Round(time.Millisecond), shared.Round(time.Millisecond))
	}
	return nil
}

// write writes n podgen pods to a new file at path.
func write(ctx context.Context, path string, n int) error {
	db, err := bolt.Open(ctx, path, bolt.Options{})
	if err != nil {
		return err
	}
	s, err := db.Resource(ctx, storebench.BoltResource())
	if err != nil {
		return errors.Join(err, db.Close())
	}
	const batch = 1000
	for i := 0; i < n; i += batch {
		txns := make([]cache.Transaction, 0, batch)
		for j := i; j < min(i+batch, n); j++ {
			txns = append(txns, cache.Transaction{Type: cache.TransactionTypeAdd, Object: podgen.Pod(j)})
		}
		if err := s.Apply(ctx, txns, fmt.Sprint(i+1)); err != nil {
			return errors.Join(err, db.Close())
		}
	}
	return db.Close()
}

// timeOpen returns the time a read-write Open of path takes, with a
// read-only DB holding the file if reader.
func timeOpen(ctx context.Context, path string, reader bool) (time.Duration, error) {
	if reader {
		r, err := bolt.Open(ctx, path, bolt.Options{ReadOnly: true})
		if err != nil {
			return 0, fmt.Errorf("reader: %w", err)
		}
		defer func() { _ = r.Close() }()
	}
	start := time.Now()
	w, err := bolt.Open(ctx, path, bolt.Options{})
	d := time.Since(start)
	if err != nil {
		return 0, fmt.Errorf("writer: %w", err)
	}
	return d, w.Close()
}
