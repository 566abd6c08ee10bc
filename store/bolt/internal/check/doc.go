// Package check verifies the content of a warmcache file against its
// invariants (index entries agree with items, every item has its envelope
// and decodes, counts match). Package inspect exposes it as Verify; the
// tests of package bolt run it on every file they open.
package check
