// Command kubebin builds (or finds in its cache) the kube-apiserver and etcd
// binaries warmcache's end-to-end tests run against, and prints their paths.
//
// Usage:
//
//	go run ./internal/kubebin/cmd/kubebin [-kubernetes-version v1.36.3] [-cache-dir DIR] [-kubectl]
//
// On success it prints, on stdout, one shell assignment per binary:
//
//	KUBE_APISERVER=/path/to/kube-apiserver
//	ETCD=/path/to/etcd
//	KUBECTL=/path/to/kubectl   (with -kubectl)
//
// Build progress and errors go to stderr. Exit codes: 0 success, 1 build
// failure, 2 usage error. The cache directory defaults to
// $WARMCACHE_KUBEBIN_DIR, else the user cache directory (see package kubebin).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"k8s.io/klog/v2"

	"github.com/warmcache/warmcache/internal/kubebin"
)

// Exit codes.
const (
	exitOK    = 0
	exitBuild = 1
	exitUsage = 2
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run is the whole command, separated from main for tests.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("kubebin", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var opts kubebin.Options
	fs.StringVar(&opts.KubernetesVersion, "kubernetes-version", kubebin.DefaultKubernetesVersion,
		"k8s.io/kubernetes release to build kube-apiserver from")
	fs.StringVar(&opts.CacheDir, "cache-dir", "",
		"root of the binary cache (default $"+kubebin.CacheDirEnv+", else the user cache directory)")
	quiet := fs.Bool("q", false, "do not stream the go tool's output to stderr")
	withKubectl := fs.Bool("kubectl", false, "build (or find) kubectl too, and print KUBECTL=path")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	if fs.NArg() != 0 {
		fmt.Fprintf(stderr, "kubebin: unexpected arguments %q\n", fs.Args())
		return exitUsage
	}
	if !*quiet {
		opts.Progress = stderr
	}
	logger := klog.NewKlogr()
	paths, err := kubebin.Ensure(klog.NewContext(ctx, logger), opts)
	if err != nil {
		fmt.Fprintln(stderr, err)
		if errors.Is(err, kubebin.ErrInvalidOptions) {
			return exitUsage
		}
		return exitBuild
	}
	fmt.Fprintf(stdout, "KUBE_APISERVER=%s\nETCD=%s\n", paths.KubeAPIServer, paths.Etcd)
	if *withKubectl {
		kubectl, err := kubebin.EnsureKubectl(klog.NewContext(ctx, logger), opts)
		if err != nil {
			fmt.Fprintln(stderr, err)
			return exitBuild
		}
		fmt.Fprintf(stdout, "KUBECTL=%s\n", kubectl)
	}
	return exitOK
}
