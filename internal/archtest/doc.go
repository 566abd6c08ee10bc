// Package archtest holds the import rules of the module as a test: which
// warmcache package may import which (see ARCHITECTURE.md). The test fails
// when a package imports one it must not, and when a package has no rule,
// so that a new package is placed deliberately.
package archtest
