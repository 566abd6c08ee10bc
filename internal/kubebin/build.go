package kubebin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/semver"
)

const (
	kubernetesModule = "k8s.io/kubernetes"
	etcdServerModule = "go.etcd.io/etcd/server/v3"
	apiserverPackage = kubernetesModule + "/cmd/kube-apiserver"
	versionPackage   = "k8s.io/component-base/version"
	stagingPrefix    = "./staging/"
	// outputTail bounds how much of the go tool's output a build error carries.
	outputTail = 8 << 10
)

// etcdMain is the whole etcd program: etcd's own entry point.
const etcdMain = `package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
`

// kubernetesModFile is what the build needs from k8s.io/kubernetes' go.mod.
type kubernetesModFile struct {
	goVersion   string
	godebug     [][2]string // key, value
	staging     []string    // module paths replaced by ./staging/... directories
	etcdVersion string      // version of go.etcd.io/etcd/server/v3 it requires
}

// parseKubernetesModFile extracts the staging replaces, go and godebug lines
// and the etcd server version from the content of kubernetes' go.mod.
func parseKubernetesModFile(name string, data []byte) (kubernetesModFile, error) {
	f, err := modfile.Parse(name, data, nil)
	if err != nil {
		return kubernetesModFile{}, fmt.Errorf("%w: parse %s: %w", ErrModule, name, err)
	}
	var m kubernetesModFile
	if f.Go != nil {
		m.goVersion = f.Go.Version
	}
	for _, g := range f.Godebug {
		m.godebug = append(m.godebug, [2]string{g.Key, g.Value})
	}
	for _, r := range f.Replace {
		if r.New.Version == "" && strings.HasPrefix(r.New.Path, stagingPrefix) {
			m.staging = append(m.staging, r.Old.Path)
		}
	}
	for _, r := range f.Require {
		if r.Mod.Path == etcdServerModule {
			m.etcdVersion = r.Mod.Version
		}
	}
	switch {
	case m.goVersion == "":
		return m, fmt.Errorf("%w: %s has no go directive", ErrModule, name)
	case len(m.staging) == 0:
		return m, fmt.Errorf("%w: %s has no replace => %s... directives", ErrModule, name, stagingPrefix)
	case !semver.IsValid(m.etcdVersion):
		return m, fmt.Errorf("%w: %s does not require %s", ErrModule, name, etcdServerModule)
	}
	return m, nil
}

// apiserverModFile renders the go.mod of the throwaway kube-apiserver module.
func apiserverModFile(m kubernetesModFile, kubernetesVersion string) ([]byte, error) {
	stagingV, err := stagingVersion(kubernetesVersion)
	if err != nil {
		return nil, err
	}
	f := &modfile.File{}
	steps := []error{
		f.AddModuleStmt("kubebin.local/kube-apiserver"),
		f.AddGoStmt(m.goVersion),
		f.AddRequire(kubernetesModule, kubernetesVersion),
	}
	for _, g := range m.godebug {
		steps = append(steps, f.AddGodebug(g[0], g[1]))
	}
	for _, p := range m.staging {
		steps = append(steps, f.AddReplace(p, "", p, stagingV))
	}
	if err := errors.Join(steps...); err != nil {
		return nil, fmt.Errorf("%w: render kube-apiserver go.mod: %w", ErrModule, err)
	}
	return modfile.Format(f.Syntax), nil
}

// etcdModFile renders the go.mod of the throwaway etcd module.
func etcdModFile(m kubernetesModFile) ([]byte, error) {
	f := &modfile.File{}
	if err := errors.Join(
		f.AddModuleStmt("kubebin.local/etcd"),
		f.AddGoStmt(m.goVersion),
		f.AddRequire(etcdServerModule, m.etcdVersion),
	); err != nil {
		return nil, fmt.Errorf("%w: render etcd go.mod: %w", ErrModule, err)
	}
	return modfile.Format(f.Syntax), nil
}

// builder runs the go tool for one Ensure call. The caller holds the lock
// of dir.
type builder struct {
	goCmd    string
	progress io.Writer
	version  string // kubernetes version
	dir      string // the version's cache directory
}

func (b *builder) build(ctx context.Context, apiserver, etcd bool) error {
	work, m, err := b.prepare(ctx)
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	if apiserver {
		mod, err := apiserverModFile(m, b.version)
		if err != nil {
			return err
		}
		if err := b.buildModule(ctx, filepath.Join(work, "kube-apiserver"), mod, nil,
			apiserverPackage, b.kubernetesLDFlags(), KubeAPIServerName); err != nil {
			return err
		}
	}
	if etcd {
		mod, err := etcdModFile(m)
		if err != nil {
			return err
		}
		if err := b.buildModule(ctx, filepath.Join(work, "etcd"), mod, []byte(etcdMain),
			".", "-s -w", EtcdName); err != nil {
			return err
		}
	}
	return nil
}

// prepare finds the go tool, removes what earlier builds left and returns
// a new work directory, which the caller removes, and k8s.io/kubernetes'
// go.mod.
func (b *builder) prepare(ctx context.Context) (work string, m kubernetesModFile, err error) {
	goPath, err := lookGo(b.goCmd)
	if err != nil {
		return "", m, err
	}
	b.goCmd = goPath
	b.removeStaleTemps()
	work, err = os.MkdirTemp("", "kubebin-")
	if err != nil {
		return "", m, fmt.Errorf("kubebin: create work directory: %w", err)
	}
	m, err = b.kubernetesModFile(ctx, work)
	if err != nil {
		os.RemoveAll(work)
		return "", m, err
	}
	return work, m, nil
}

// kubernetesLDFlags are the linker flags of a Kubernetes binary: stripped,
// and stamped with b.version as k8s.io/component-base/version reads it.
func (b *builder) kubernetesLDFlags() string {
	v := strings.Split(strings.TrimPrefix(b.version, "v"), ".")
	return strings.Join([]string{
		"-s", "-w",
		"-X", versionPackage + ".gitVersion=" + b.version,
		"-X", versionPackage + ".gitMajor=" + v[0],
		"-X", versionPackage + ".gitMinor=" + v[1],
		"-X", versionPackage + ".gitTreeState=clean",
	}, " ")
}

// kubernetesModFile downloads k8s.io/kubernetes' go.mod through the go tool
// (so GOPROXY, GONOSUMDB and the module cache apply) and parses it.
func (b *builder) kubernetesModFile(ctx context.Context, work string) (kubernetesModFile, error) {
	mod := kubernetesModule + "@" + b.version
	var out bytes.Buffer
	if err := b.run(ctx, work, &out, "mod", "download", "-json", mod); err != nil {
		// go mod download -json reports module errors in its JSON output.
		var info struct{ Error string }
		if json.Unmarshal(out.Bytes(), &info) == nil && info.Error != "" {
			return kubernetesModFile{}, fmt.Errorf("%w: download %s: %s", ErrGoCommand, mod, info.Error)
		}
		return kubernetesModFile{}, err
	}
	var info struct{ GoMod, Error string }
	if err := json.Unmarshal(out.Bytes(), &info); err != nil {
		return kubernetesModFile{}, fmt.Errorf("%w: decode go mod download output for %s: %w", ErrGoCommand, mod, err)
	}
	if info.Error != "" || info.GoMod == "" {
		return kubernetesModFile{}, fmt.Errorf("%w: download %s: no go.mod (%s)", ErrGoCommand, mod, info.Error)
	}
	data, err := os.ReadFile(info.GoMod)
	if err != nil {
		return kubernetesModFile{}, fmt.Errorf("%w: read %s: %w", ErrModule, info.GoMod, err)
	}
	return parseKubernetesModFile(mod+"/go.mod", data)
}

// buildModule writes a module (go.mod and an optional main.go) into modDir,
// builds pkg in it and moves the result to b.dir/name atomically.
func (b *builder) buildModule(ctx context.Context, modDir string, goMod, mainGo []byte, pkg, ldflags, name string) error {
	if err := os.MkdirAll(modDir, 0o755); err != nil {
		return fmt.Errorf("kubebin: create module for %s: %w", name, err)
	}
	if err := os.WriteFile(filepath.Join(modDir, "go.mod"), goMod, 0o644); err != nil {
		return fmt.Errorf("kubebin: write go.mod for %s: %w", name, err)
	}
	if mainGo != nil {
		if err := os.WriteFile(filepath.Join(modDir, "main.go"), mainGo, 0o644); err != nil {
			return fmt.Errorf("kubebin: write main.go for %s: %w", name, err)
		}
	}
	final := filepath.Join(b.dir, name)
	tmp := filepath.Join(b.dir, fmt.Sprintf(".%s-%d-%d.tmp", name, os.Getpid(), time.Now().UnixNano()))
	defer removeIfExists(tmp)
	var out bytes.Buffer
	if err := b.run(ctx, modDir, &out, "build", "-mod=mod", "-trimpath", "-v",
		"-ldflags="+ldflags, "-o", tmp, pkg); err != nil {
		return err
	}
	if !executable(tmp) {
		return fmt.Errorf("%w: go build of %s produced no executable %s", ErrGoCommand, pkg, tmp)
	}
	if err := os.Rename(tmp, final); err != nil {
		return fmt.Errorf("kubebin: install %s: %w", final, err)
	}
	return nil
}

// run runs the go tool in dir. stdout goes to stdout; stderr goes to the
// progress writer, and its tail into the error when the command fails.
func (b *builder) run(ctx context.Context, dir string, stdout io.Writer, args ...string) error {
	cmd := exec.CommandContext(ctx, b.goCmd, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(),
		"GOFLAGS=", // the caller's flags (-mod=vendor, ...) do not apply to this module
		"GOWORK=off",
		"GO111MODULE=on",
		"CGO_ENABLED=0",
		"GOOS="+runtime.GOOS,
		"GOARCH="+runtime.GOARCH,
	)
	tail := &tailBuffer{max: outputTail}
	var stderr io.Writer = tail
	if b.progress != nil {
		stderr = io.MultiWriter(tail, b.progress)
	}
	cmd.Stdout = stdout
	cmd.Stderr = stderr
	setProcessGroup(cmd)
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("kubebin: go %s: %w", strings.Join(args, " "), ctx.Err())
		}
		return fmt.Errorf("%w: go %s in %s: %w\n%s", ErrGoCommand, strings.Join(args, " "), dir, err, tail.String())
	}
	return nil
}

// removeStaleTemps deletes temporary binaries left by interrupted builds.
// Only the lock holder calls it, so no build is writing them.
func (b *builder) removeStaleTemps() {
	stale, _ := filepath.Glob(filepath.Join(b.dir, ".*.tmp"))
	for _, p := range stale {
		removeIfExists(p)
	}
}

// removeIfExists removes path; a missing file is not an error, and other
// errors are left for the next build's cleanup.
func removeIfExists(path string) { _ = os.Remove(path) }

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	max int
	buf []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string { return string(t.buf) }
