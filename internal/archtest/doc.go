// Package archtest holds the import rules of the module as a test: which
// warmcache package may import which (see ARCHITECTURE.md). The test fails
// when a package imports one it must not, and when a package has no rule,
// so that a new package is placed deliberately.
//
// A second test keeps ARCHITECTURE.md's package table true: its "imports
// (of ours)" column must list exactly what go list reports for the non-test
// files of the packages each row covers, those of the nested modules
// included. ARCHITECTURE.md states the convention of its rows.
//
// It also holds the rules of the repository's modules
// (TestPublishedModules): every go.mod resolves for a user who fetches it
// (RELEASING.md).
package archtest
