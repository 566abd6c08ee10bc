package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/warmcache/warmcache/benchmarks/internal/storebench"
	"github.com/warmcache/warmcache/store/bolt"
)

// writeCacheFile writes a cache file of pods 0..n-1 at path, as an
// informer of a factory stores them (protobuf, namespace index, without
// TypeMeta), committed as one relist. It writes into a directory beside
// path and moves the file (with its state file) to path when complete, so
// that an interrupted write leaves no file to reuse.
func writeCacheFile(ctx context.Context, path string, n int) (err error) {
	tmp, err := os.MkdirTemp(filepath.Dir(path), ".snapshotbench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	file := filepath.Join(tmp, "cache.db")
	db, err := bolt.Open(ctx, file, bolt.Options{Sync: bolt.UnsafeNoSync})
	if err != nil {
		return err
	}
	defer func() {
		if cerr := db.Close(); cerr != nil && err == nil {
			err = cerr
		}
		if err == nil {
			err = moveFile(file, path)
		}
	}()
	s, err := db.Resource(ctx, storebench.BoltResource())
	if err != nil {
		return err
	}
	err = storebench.RelistPods(ctx, s, n, 1000, strconv.Itoa(n), func(_ int, p *corev1.Pod) { p.TypeMeta = metav1.TypeMeta{} })
	if err != nil {
		return errors.Join(err, s.Close())
	}
	return s.Close()
}

// moveFile moves the cache file src and its state file to dst.
func moveFile(src, dst string) error {
	for _, suffix := range []string{".state", ""} {
		if err := os.Rename(src+suffix, dst+suffix); err != nil && !(suffix != "" && os.IsNotExist(err)) {
			return fmt.Errorf("move %s: %w", src+suffix, err)
		}
	}
	return nil
}
