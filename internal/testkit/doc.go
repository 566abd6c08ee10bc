// Package testkit is what the tests of every package share: a Pod builder,
// the bound on one wait (Timeout), a receive from a watch with that bound
// (Recv) and a small JSON codec for pods (PodJSON).
//
// It imports no package of this module, so the tests of any package, the
// in-package tests of the store, the pipeline and the test support
// included, can import it without a cycle (internal/archtest holds it to
// that). Only tests, benchmarks and test support import it.
package testkit
