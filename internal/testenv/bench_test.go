package testenv

import (
	"testing"
)

// BenchmarkStart measures starting etcd and kube-apiserver until ready
// (binaries already cached), and stopping them.
func BenchmarkStart(b *testing.B) {
	if _, err := Start(b.Context(), b, Options{}); err != nil { // warm the binary cache
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		env, err := Start(b.Context(), nil, Options{})
		if err != nil {
			b.Fatal(err)
		}
		env.Stop()
	}
}

// BenchmarkRestartAPIServer measures killing kube-apiserver and waiting
// until its replacement is ready.
func BenchmarkRestartAPIServer(b *testing.B) {
	env, err := Start(b.Context(), b, Options{})
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if err := env.RestartAPIServer(b.Context()); err != nil {
			b.Fatal(err)
		}
	}
}
