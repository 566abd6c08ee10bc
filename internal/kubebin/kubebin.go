// Package kubebin provides the kube-apiserver and etcd binaries that
// warmcache's end-to-end tests run against, built from the Go module proxy
// and cached outside the repository.
//
// kube-apiserver is built from the k8s.io/kubernetes module at
// Options.KubernetesVersion, in a throwaway module whose go.mod replaces each
// k8s.io staging module (listed in kubernetes' own go.mod as
// "=> ./staging/src/...") by its published v0.MINOR.PATCH release. etcd is
// built from go.etcd.io/etcd/server/v3 at the version kubernetes' go.mod
// requires, with a main calling etcdmain.Main. Both are statically linked
// (CGO_ENABLED=0) for the host platform.
//
// Binaries are cached in CacheDir/<KubernetesVersion>/ and reused while they
// exist and are executable. A build writes to a temporary name in that
// directory and renames it into place, so an interrupted build never leaves a
// partial binary behind. A lock file in the same directory serialises
// builders across processes: concurrent callers (parallel test packages)
// build once and the others wait for the result.
package kubebin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"golang.org/x/mod/semver"
	"k8s.io/klog/v2"
)

// DefaultKubernetesVersion is the k8s.io/kubernetes release built when
// Options.KubernetesVersion is empty. It matches the client-go release
// warmcache is built against.
const DefaultKubernetesVersion = "v1.36.3"

// CacheDirEnv names the environment variable that overrides the default root
// of the binary cache.
const CacheDirEnv = "WARMCACHE_KUBEBIN_DIR"

// File names of the binaries inside a version's cache directory.
const (
	KubeAPIServerName = "kube-apiserver"
	EtcdName          = "etcd"
	lockName          = ".lock"
)

// Sentinel errors. Errors returned by Ensure wrap one of these with the
// operation, module or file concerned; test them with errors.Is.
var (
	// ErrInvalidOptions reports an Options value Ensure cannot work with.
	ErrInvalidOptions = errors.New("kubebin: invalid options")
	// ErrGoCommand reports that the go tool is missing or one of its
	// invocations (download, build) failed; the error carries the tail of
	// its output.
	ErrGoCommand = errors.New("kubebin: go command failed")
	// ErrModule reports that k8s.io/kubernetes' go.mod could not be read
	// or lacks what the build needs (staging replaces, the etcd version).
	ErrModule = errors.New("kubebin: unusable kubernetes go.mod")
	// ErrLock reports that the cache directory's build lock could not be
	// taken (other than by cancellation, which returns the context error).
	ErrLock = errors.New("kubebin: cannot lock cache directory")
)

// Options configures Ensure. The zero value builds DefaultKubernetesVersion
// into the default cache directory.
type Options struct {
	// KubernetesVersion is the k8s.io/kubernetes release to build
	// kube-apiserver from, of the form vMAJOR.MINOR.PATCH with MAJOR 1.
	// Default: DefaultKubernetesVersion.
	KubernetesVersion string

	// CacheDir is the root of the binary cache; the binaries of a version
	// live in CacheDir/<KubernetesVersion>/. A relative path is resolved
	// against the working directory. Default: $WARMCACHE_KUBEBIN_DIR when
	// set, otherwise os.UserCacheDir()/warmcache/kubebin.
	CacheDir string

	// GoCommand is the go tool used to download modules and build.
	// Default: "go", looked up in $PATH (go test and go run put their own
	// toolchain first in $PATH).
	GoCommand string

	// Progress, when non-nil, receives the go tool's output while
	// building (the -v package list and any errors). Default: nil; the
	// output is then discarded, except that its tail is part of a build
	// error.
	Progress io.Writer
}

// Paths holds absolute paths of the two binaries. They are owned by the
// cache: callers run them and never modify or remove them.
type Paths struct {
	// KubeAPIServer is the kube-apiserver binary.
	KubeAPIServer string
	// Etcd is the etcd binary.
	Etcd string
}

// Ensure returns the paths of kube-apiserver and etcd for opts, building
// whichever is missing. When both are cached it returns at once without
// running the go tool; otherwise it takes the cache directory's lock, which
// may wait for another process's build, and builds. A cold build takes
// minutes. It is safe for concurrent use by goroutines and processes.
//
// Progress is logged through the logger in ctx (klog.FromContext).
// Cancelling ctx stops a build in progress and leaves the cache as it was.
func Ensure(ctx context.Context, opts Options) (Paths, error) {
	o, err := opts.complete()
	if err != nil {
		return Paths{}, err
	}
	dir := filepath.Join(o.CacheDir, o.KubernetesVersion)
	paths := Paths{
		KubeAPIServer: filepath.Join(dir, KubeAPIServerName),
		Etcd:          filepath.Join(dir, EtcdName),
	}
	if executable(paths.KubeAPIServer) && executable(paths.Etcd) {
		return paths, nil
	}

	logger := klog.FromContext(ctx).WithValues("kubernetesVersion", o.KubernetesVersion, "dir", dir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return Paths{}, fmt.Errorf("%w: create %s: %w", ErrInvalidOptions, dir, err)
	}
	lockPath := filepath.Join(dir, lockName)
	logger.V(2).Info("Taking the kubebin build lock", "lock", lockPath)
	unlock, err := lockFile(ctx, lockPath)
	if err != nil {
		return Paths{}, err
	}
	defer unlock()

	// Another process may have built while we waited for the lock.
	needAPIServer, needEtcd := !executable(paths.KubeAPIServer), !executable(paths.Etcd)
	if !needAPIServer && !needEtcd {
		return paths, nil
	}
	b := &builder{
		goCmd:    o.GoCommand,
		progress: o.Progress,
		version:  o.KubernetesVersion,
		dir:      dir,
	}
	start := time.Now()
	logger.Info("Building binaries from the Go module proxy; a cold build takes minutes",
		"kubeAPIServer", needAPIServer, "etcd", needEtcd)
	if err := b.build(ctx, needAPIServer, needEtcd); err != nil {
		return Paths{}, err
	}
	logger.Info("Built binaries", "elapsed", time.Since(start).Round(time.Millisecond))
	return paths, nil
}

// complete validates o and fills in defaults.
func (o Options) complete() (Options, error) {
	if o.KubernetesVersion == "" {
		o.KubernetesVersion = DefaultKubernetesVersion
	}
	if _, err := stagingVersion(o.KubernetesVersion); err != nil {
		return o, err
	}
	if o.CacheDir == "" {
		o.CacheDir = os.Getenv(CacheDirEnv)
	}
	if o.CacheDir == "" {
		base, err := os.UserCacheDir()
		if err != nil {
			return o, fmt.Errorf("%w: no default cache directory (set %s): %w", ErrInvalidOptions, CacheDirEnv, err)
		}
		o.CacheDir = filepath.Join(base, "warmcache", "kubebin")
	}
	abs, err := filepath.Abs(o.CacheDir)
	if err != nil {
		return o, fmt.Errorf("%w: cache directory %q: %w", ErrInvalidOptions, o.CacheDir, err)
	}
	o.CacheDir = abs
	if o.GoCommand == "" {
		o.GoCommand = "go"
	}
	return o, nil
}

// stagingVersion maps a kubernetes release (v1.36.3) to the version of its
// published staging modules (v0.36.3).
func stagingVersion(kubernetesVersion string) (string, error) {
	v := kubernetesVersion
	if !semver.IsValid(v) || semver.Canonical(v) != v || semver.Major(v) != "v1" || semver.Prerelease(v) != "" {
		return "", fmt.Errorf("%w: kubernetes version %q is not a release of the form v1.MINOR.PATCH", ErrInvalidOptions, v)
	}
	return "v0" + v[len("v1"):], nil
}

// executable reports whether path is a regular file with an execute bit set.
func executable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
}

// lookGo resolves the go command, for a clear error when it is missing.
func lookGo(goCmd string) (string, error) {
	p, err := exec.LookPath(goCmd)
	if err != nil {
		return "", fmt.Errorf("%w: find go tool %q: %w", ErrGoCommand, goCmd, err)
	}
	return p, nil
}
