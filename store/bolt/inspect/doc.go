// Package inspect reads a warmcache file the way a tool does, without the
// Go types or index functions of the controller that wrote it: it lists
// the recorded resources (Resources), opens one for reading as recorded
// (OpenRecorded), checks the file's structure (CheckFile) and content
// (Verify), and writes a compacted copy (CompactTo). The snapshot CLI and
// the benchmarks are built on it; a controller needs only package bolt.
//
// Every function takes a *bolt.DB opened by the caller, usually with
// bolt.Options{ReadOnly: true}, and never writes the file it inspects.
// Errors are those of package bolt (bolt.ErrCorrupt, bolt.ErrClosed,
// bolt.ErrResourceNotFound, ...), wrapped with the operation and the file.
package inspect

import (
	"github.com/warmcache/warmcache/store/bolt"
	"github.com/warmcache/warmcache/store/bolt/internal/access"
	"github.com/warmcache/warmcache/store/bolt/internal/layout"
)

// file returns what this package reads db's file through beyond package
// bolt's API.
func file(db *bolt.DB) access.DB[*bolt.Store, bolt.Identity] { return db.Access(access.Token{}) }

// FormatVersion is the file format version package bolt writes and the
// newest it reads; bolt.Open returns a *bolt.VersionError for a newer one.
const FormatVersion = layout.FormatVersion

// SchemaVersion is the resource schema version (ResourceInfo.Schema)
// package bolt writes. bolt's DB.Resource discards a resource recorded with
// another one; OpenRecorded does not check it, so a tool that reads
// recorded resources must refuse a ResourceInfo whose Schema differs.
const SchemaVersion = layout.SchemaVersion

// StatePath returns the path of the state file that describes the cache
// file at path (see bolt.SyncOnClose). A tool that replaces a cache file
// with another (a copy, a compacted file) removes it: it describes the old
// file.
func StatePath(path string) string { return layout.StatePath(path) }
