package kubebin

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/mod/modfile"
	"k8s.io/klog/v2"
)

// KubectlName is the file name of kubectl inside a version's cache
// directory.
const KubectlName = "kubectl"

const kubectlPackage = kubernetesModule + "/cmd/kubectl"

// EnsureKubectl returns the path of a kubectl binary built from
// k8s.io/kubernetes at opts.KubernetesVersion, as Ensure builds
// kube-apiserver (a throwaway module replacing the staging modules by
// their releases, statically linked, cached beside it under the same
// lock), building it if it is missing. A cold build takes minutes.
func EnsureKubectl(ctx context.Context, opts Options) (string, error) {
	o, err := opts.complete()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(o.CacheDir, o.KubernetesVersion)
	path := filepath.Join(dir, KubectlName)
	if executable(path) {
		return path, nil
	}
	logger := klog.FromContext(ctx).WithValues("kubernetesVersion", o.KubernetesVersion, "dir", dir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("%w: create %s: %w", ErrInvalidOptions, dir, err)
	}
	unlock, err := lockFile(ctx, filepath.Join(dir, lockName))
	if err != nil {
		return "", err
	}
	defer unlock()
	if executable(path) {
		return path, nil
	}
	b := &builder{goCmd: o.GoCommand, progress: o.Progress, version: o.KubernetesVersion, dir: dir}
	start := time.Now()
	logger.Info("Building kubectl from the Go module proxy; a cold build takes minutes")
	if err := b.buildKubectl(ctx); err != nil {
		return "", err
	}
	logger.Info("Built kubectl", "elapsed", time.Since(start).Round(time.Millisecond))
	return path, nil
}

// buildKubectl builds kubectl into b.dir. The caller holds the lock.
func (b *builder) buildKubectl(ctx context.Context) error {
	work, m, err := b.prepare(ctx)
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	mod, err := kubectlModFile(m, b.version)
	if err != nil {
		return err
	}
	return b.buildModule(ctx, filepath.Join(work, "kubectl"), mod, nil, kubectlPackage, b.kubernetesLDFlags(), KubectlName)
}

// kubectlModFile renders the go.mod of the throwaway kubectl module: the
// kube-apiserver one under another module path.
func kubectlModFile(m kubernetesModFile, kubernetesVersion string) ([]byte, error) {
	mod, err := apiserverModFile(m, kubernetesVersion)
	if err != nil {
		return nil, err
	}
	f, err := modfile.Parse("go.mod", mod, nil)
	if err != nil {
		return nil, fmt.Errorf("%w: render kubectl go.mod: %w", ErrModule, err)
	}
	if err := errors.Join(f.AddModuleStmt("kubebin.local/kubectl")); err != nil {
		return nil, fmt.Errorf("%w: render kubectl go.mod: %w", ErrModule, err)
	}
	return modfile.Format(f.Syntax), nil
}
