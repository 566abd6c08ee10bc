package main

import (
	"context"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/warmcache/warmcache/cmd/snapshot/internal/cli"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run runs the command with args and returns its exit code; an interrupt
// (Ctrl-C, SIGTERM) cancels it.
func run(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return cli.Run(ctx, cli.Env{Stdout: stdout, Stderr: stderr}, args)
}
