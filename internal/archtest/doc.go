// Package archtest holds the import rules of the module as a test: which
// warmcache package may import which (see ARCHITECTURE.md). The test fails
// when a package imports one it must not, and when a package has no rule,
// so that a new package is placed deliberately. It also holds the rules of
// the repository's modules (TestPublishedModules): every go.mod resolves
// for a user who fetches it (RELEASING.md).
package archtest
