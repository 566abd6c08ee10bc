// Package e2e holds warmcache's end-to-end tests: a workqueue controller
// and the controller-runtime example against a real kube-apiserver and
// etcd (internal/testenv), restarted, killed and fed broken cache files.
// Requests are counted from the apiserver's own records (its audit log and
// /metrics), never from warmcache's code.
//
// The workqueue controller (internal/democtl, the pattern of
// examples/workqueue instrumented) runs as a child process: the test binary
// re-executes itself with WARMCACHE_E2E_CHILD=democtl and runs
// democtl.Main, whose event log (one JSON line per delivered event) comes
// back on stdout. The controller-runtime example is a nested module;
// TestControllerRuntime runs its tests with `go test` in its directory.
//
// The tests start etcd and kube-apiserver (built on first use by
// internal/kubebin, minutes; `make kubebin` builds them ahead). They are
// skipped under -short, and fail, never skip, when the binaries cannot be
// built or started. Most share one apiserver (sharedCluster) and run in
// parallel, each in a namespace of its own, counting only that namespace's
// requests; a test that restarts, compacts or rewinds the cluster, or
// needs other apiserver flags, starts its own (startCluster).
package e2e
