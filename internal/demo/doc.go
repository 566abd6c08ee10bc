// Package demo is the implementation of `make demo` and the helpers the
// end-to-end tests share with it: a kubeconfig for a child process, pods
// created concurrently from podgen, the demo controller (internal/democtl) run as a child
// process with its stats read back, and the side-by-side table.
package demo
