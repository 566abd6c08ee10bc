// Package bolt is warmcache's persistent store: a store.Store (client-go's
// cache.Indexer and cache.TransactionStore, plus atomic batches with their
// resourceVersion, streamed relists and scans) whose objects live in a
// bbolt file instead of the Go heap, and survive restarts.
//
// Package factory opens the file and the store of each informer for a
// controller (factory.Options.Path; factory.Options.Bolt passes this
// package's Options). Open and DB.Resource are for an informer or a tool
// built by hand (see ExampleOpen); package store/bolt/inspect reads a file
// as the snapshot CLI does.
//
// # Files and resources
//
// Open opens one file (one per informer factory); DB.Resource opens the
// Store of one resource in it, named by an Identity. DB.DropResource
// deletes a resource; Remove deletes a file and the files beside it,
// MoveAside renames a corrupt one for inspection.
//
// # What is guaranteed
//
// The numbers are those of the invariants in ARCHITECTURE.md.
//
//   - A write (Add, Update, Delete, Transaction, Apply, Bookmark, a
//     Replace's Commit) is one transaction that records the store's
//     resourceVersion with its changes (1). A relist (BeginReplace) or a
//     fill of an empty store (BeginFill) is all or nothing across a crash;
//     an interrupted one is reported by State().RelistInterrupted (2).
//   - A resource recorded differently (see DB.Resource) is discarded on
//     open, with State().Discarded saying why (3).
//   - Every stored record carries a checksum. A damaged, truncated,
//     foreign or newer file is refused by Open with ErrCorrupt, before
//     bbolt maps it; a file left unflushed when the machine restarted with
//     ErrUnflushed. Damage found while the file is open (by a read, or the
//     background check of its pages: DB.FileCheck) never hands out a bad
//     object: the object is skipped, the resource marked incomplete and
//     ResourceOptions.OnCorruption called, so that the informer relists
//     (5). A full or read-only disk fails the write (ErrDiskFull,
//     ErrReadOnly) and leaves the previous content intact.
//   - Objects a read returns are shared and objects passed to a write
//     belong to the store afterwards: nobody may mutate them (6).
//
// # Reads
//
// A bulk read (List, ByIndex) decodes every object it returns, as
// client-go's listers make every call do; store.Select (warmcache's
// listers use it), Scan and ScanParallel decode only what they return, a
// bounded number at a time. The hot tier serves repeated point reads.
//
// # Concurrency, upgrades, backup
//
// A DB and its Stores are safe for concurrent use. One read-write DB may
// have a file open at a time (others get ErrLocked after Options.Timeout);
// read-only DBs never make it wait. A release that changes a resource's
// layout bumps its schema version: the first start of the new release
// relists each resource once. DB.Backup copies the file while writes go on;
// DB.BackupHandler serves the copy.
//
// The file layout, the design behind each guarantee and the measurements
// behind the defaults are in docs/design/bolt.md.
package bolt
