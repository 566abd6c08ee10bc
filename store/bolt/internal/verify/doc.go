// Package verify checks the content of a warmcache file against invariant
// 4 (index entries agree with items; every item has its envelope and
// decodes; counts match; every record matches its checksum). Package
// inspect exposes it as Verify; the tests of package bolt run it on every
// file they open. The structure of the file's pages is package
// filecheck's.
package verify
