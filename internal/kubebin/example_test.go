package kubebin_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"

	"github.com/warmcache/warmcache/internal/kubebin"
)

// Ensure returns cached binaries at once and builds them otherwise.
// (This example only compiles: a cold build takes minutes.)
func ExampleEnsure() {
	paths, err := kubebin.Ensure(context.Background(), kubebin.Options{Progress: os.Stderr})
	if err != nil {
		fmt.Println(err)
		return
	}
	out, _ := exec.Command(paths.KubeAPIServer, "--version").Output()
	fmt.Print(string(out))
}
