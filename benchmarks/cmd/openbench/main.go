// Command openbench measures how long a warm start waits for its file:
// bolt.Open of an existing, healthy cache file plus DB.Resource of its
// pods, with the page cache warm, as a controller restarting on its file
// does.
//
// Usage:
//
//	go run ./benchmarks/cmd/openbench -file DIR/pods-1m.db [-n 1000000] [-runs 3]
//
// The file is built first if it does not exist: -n pods from
// internal/podgen written by one relist (BeginReplace, pages of 1000,
// Commit), then closed. Building a million pods takes minutes and about
// 6.4 GB; keep the file and pass it again. Before the timed runs the file
// is read once, so that its pages are in the page cache, and opened once
// untimed. Each run then reports Open, Resource, their sum, and how long
// the background check of the file (DB.WaitFileCheck) took to its verdict.
//
// The table goes to stdout, progress to stderr. Exit status: 0 on success,
// 1 if a measurement failed, 2 for bad flags.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/warmcache/warmcache/benchmarks/internal/cmdrun"
	"github.com/warmcache/warmcache/benchmarks/internal/machine"
	"github.com/warmcache/warmcache/benchmarks/internal/storebench"
	"github.com/warmcache/warmcache/store/bolt"
)

// buildPage is the number of pods per Replace page when building a file.
const buildPage = 1000

type options struct {
	file string
	n    int
	runs int
}

func parse(args []string, stderr io.Writer) (options, error) {
	fs := cmdrun.FlagSet("openbench", stderr)
	var o options
	fs.StringVar(&o.file, "file", "", "cache file to open; built with -n pods if it does not exist (required)")
	fs.IntVar(&o.n, "n", 100000, "number of pods of a file that is built")
	fs.IntVar(&o.runs, "runs", 3, "number of timed runs")
	if err := cmdrun.Parse(fs, args); err != nil {
		return o, err
	}
	switch {
	case o.file == "":
		return o, fmt.Errorf("%w: -file is required", cmdrun.ErrUsage)
	case o.n < 1, o.runs < 1:
		return o, fmt.Errorf("%w: -n and -runs must be positive", cmdrun.ErrUsage)
	}
	return o, nil
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	return cmdrun.Run("openbench", args, stderr, parse, func(ctx context.Context, o options) error {
		return measure(ctx, o, args, stdout, stderr)
	})
}

func measure(ctx context.Context, o options, args []string, stdout, stderr io.Writer) error {
	if _, err := os.Stat(o.file); errors.Is(err, fs.ErrNotExist) {
		fmt.Fprintf(stderr, "building %s with %d pods\n", o.file, o.n)
		start := time.Now()
		if err := build(ctx, o.file, o.n, stderr); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "built in %v\n", time.Since(start).Round(time.Millisecond))
	} else if err != nil {
		return err
	}
	fi, err := os.Stat(o.file)
	if err != nil {
		return err
	}
	if err := warmPageCache(o.file); err != nil {
		return err
	}
	// One untimed open: it also persists the freelist of a file whose last
	// writer did not, as a clean shutdown does.
	if _, err := openOnce(ctx, o.file); err != nil {
		return err
	}
	before := machine.Read()
	fmt.Fprintf(stdout, "openbench %v\nfile %s, %.1f MB\n", args, o.file, float64(fi.Size())/1e6)
	fmt.Fprintf(stdout, "%4s %12s %12s %12s %16s %10s\n", "run", "open", "resource", "total", "background check", "objects")
	for i := range o.runs {
		r, err := openOnce(ctx, o.file)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%4d %12v %12v %12v %16v %10d\n", i+1, r.open, r.resource, r.open+r.resource, r.check, r.objects)
	}
	if l := machine.RunLabel(before, machine.Read()); l != "" {
		fmt.Fprintln(stdout, l)
	}
	return nil
}

type result struct {
	open, resource, check time.Duration
	objects               int
}

// openOnce opens the file and its pods, waits for the background check's
// verdict and closes it.
func openOnce(ctx context.Context, path string) (result, error) {
	var r result
	start := time.Now()
	db, err := bolt.Open(ctx, path, bolt.Options{})
	if err != nil {
		return r, err
	}
	r.open = time.Since(start)
	s, err := db.Resource(ctx, storebench.BoltResource())
	r.resource = time.Since(start) - r.open
	if err != nil {
		return r, errors.Join(err, db.Close())
	}
	st, err := s.State()
	if err != nil {
		return r, errors.Join(err, db.Close())
	}
	r.objects = st.Objects
	fc, err := db.WaitFileCheck(ctx)
	if err == nil && fc.Err != nil {
		err = fmt.Errorf("background check: %w", fc.Err)
	}
	r.check = fc.Duration
	return r, errors.Join(err, db.Close())
}

// build writes n pods into a new file at path with one relist.
func build(ctx context.Context, path string, n int, stderr io.Writer) (err error) {
	db, err := bolt.Open(ctx, path, bolt.Options{})
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, db.Close()) }()
	s, err := db.Resource(ctx, storebench.BoltResource())
	if err != nil {
		return err
	}
	return storebench.RelistPods(ctx, s, n, buildPage, fmt.Sprint(n+1), func(i int, _ *corev1.Pod) {
		if i > 0 && i%100000 == 0 {
			fmt.Fprintf(stderr, "  %d pods\n", i)
		}
	})
}

// warmPageCache reads the file once.
func warmPageCache(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	_, err = io.Copy(io.Discard, f)
	return errors.Join(err, f.Close())
}
