// Package benchmarks holds warmcache's side-by-side benchmarks against
// client-go, on the same realistic pods (internal/podgen, about 7.7 KB of
// JSON each) decoded from protobuf as an informer's objects are.
//
//   - BenchmarkStore/<impl>/<op>/<n> compares client-go's cache.NewIndexer
//     with warmcache's memory and bolt stores: heap (Go heap per object after
//     GC), add and update (batched writes), get (GetByKey latency), byindex
//     (ByIndex on the namespace index) and replace.
//   - BenchmarkInformer/<impl>/<op>/<n> compares client-go's
//     SharedIndexInformer with warmcache's informer (on the memory and bolt
//     stores), all fed over HTTP with protobuf by internal/fakeapi running
//     in a child process: coldsync (time and heap), events (update
//     notifications per second), and for bolt warmstart and
//     warmstart-nohandler (restart from the file to HasSynced, with and
//     without a handler to replay the stored objects to).
//
// Each benchmark reports its figures as custom metrics (heap-bytes/obj,
// pods/s, p50-µs, p99-µs, ...). The sizes come from the WARMCACHE_BENCH_N
// environment variable, a comma-separated list (default 10000):
//
//	go test -run '^$' -bench . -benchtime 1x ./benchmarks/
//	WARMCACHE_BENCH_N=100000 go test -run '^$' -bench 'Store/bolt' -benchtime 1x -timeout 1h ./benchmarks/
//
// The programs storebench and informerbench (under cmd/) run the same
// measurements at 100k pods by default and print tables with each
// implementation's ratio to client-go; those tables are what the README
// quotes. informerbench's churn spreads its updates over every pod;
// -churn-hot N has them cycle over a hot set of N pods instead, as a
// rollout's do, and its table names the hot set on the churn's rows.
//
// snapshotbench (under cmd/) measures the snapshot CLI on a cache file of
// podgen pods (table, -o json, -o yaml, export, --sort-by), each run as a
// child process, beside kubectl's printers (k8s.io/cli-runtime's) on the
// same objects, and checks that both print the same bytes.
package benchmarks
