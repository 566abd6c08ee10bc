// Package bolt is warmcache's persistent store: a store.Store (client-go's
// cache.Indexer and cache.TransactionStore, plus atomic batches with their
// resourceVersion, streamed relists and scans) whose objects live in a bbolt
// file instead of the Go heap, and survive restarts.
//
// Package factory opens the file and the store of each informer for a
// controller (factory.Options.Path; factory.Options.Bolt passes this
// package's Options). Open and DB.Resource are for an informer or a tool
// built by hand (see ExampleOpen), and package inspect reads a file as the
// snapshot CLI does.
//
// # Files and resources
//
// Open opens one file (one per informer factory); DB.Resource opens the
// Store of one resource in it, named by an Identity: group, version,
// resource, kind and the list/watch scope (namespace, label and field
// selectors, shard). Everything about a resource lives under one top-level
// bucket named by Identity.String(); DB.DropResource deletes that bucket in
// one transaction:
//
//	warmcache/format              msgpack {magic, version, created}
//	res;g=..;v=..;r=..;k=..;ns=..;l=..;f=..;s=../
//	  meta                        msgpack: schema version, identity, codec,
//	                              type fingerprint,
//	                              index names and version, RV, state,
//	                              object count, staged generation, times;
//	                              then a checksum
//	  live                        8-byte number of the live generation, checksum
//	  gen/<n>/items/   key     -> 8-byte blob id + namespace and labels +
//	                              msgpack {index name: [values]} + checksum
//	                   (a key that is empty or starts with 0x00 gets a 0x00 prefix)
//	  gen/<n>/blobs/   blob id -> msgpack [rv, uid, payload, checksum]
//	  gen/<n>/index/<name>/ value 0x00 key -> checksum
//	                   (a name that is empty or starts with 0x00 gets a 0x00 prefix;
//	                   a value over 1 KiB is filed under its first 256 bytes and
//	                   its SHA-256, and its entry holds it after the checksum)
//
// Every checksum is a CRC-32C (4 bytes) of the record, bound to the key it
// is stored under (an envelope's and an item entry's to the object key,
// an index entry's to its index name): bbolt checksums its meta pages
// only, so a byte damaged inside a value would otherwise read back as
// valid data. Reads verify the checksums of what they read (1% of a
// decode); a mismatch is ErrChecksum (an ErrCorrupt) and is handled like
// an object that does not decode (invariant 5), and inspect.Verify
// reports it with the key.
//
// An item's envelope carries its RV and UID beside the codec's payload, so
// ResourceVersionOf and relist diffs never decode objects. A codec.Bound
// codec (package store/seal's encryption) gets the item's additional data
// with each payload: the bucket name, key, RV and UID (layout.ItemAD). A
// codec that seals under keys (CheckKey) has the header of every payload
// checked when the resource opens: one under a key it does not hold
// discards the resource (a missing or wrong key: relisted, never served);
// one under an older key it holds marks a complete resource incomplete, so
// the relist that follows rewrites every object with the current key.
// Envelopes live in their own bucket under ids given in the order items
// are added, so that a write in watch order (keys anywhere in the key
// space) rewrites a leaf of small item entries and appends its envelope
// rather than rewriting a leaf of two to four neighbouring envelopes. Index entries
// are composite keys found with one cursor seek per value (no bucket per
// value); the index values recorded in the item entry (its reverse entry)
// let an update or delete remove the old entries without decoding the old
// object, and an update that keeps them writes the envelope only. A 0x00 or
// 0x01 inside an indexed value is escaped, so any string can be indexed.
//
// # Invariants
//
// The warmcache design's invariants hold as follows.
//
//  1. The persisted RV never runs ahead of the items: every write (Apply,
//     Add, Update, Delete, Transaction, Bookmark, a Replace's Commit) is one
//     bbolt transaction that writes the RV with the changes.
//  2. A relist is atomic across a crash: BeginReplace creates a new
//     generation and records it in meta; each Replace.Add writes a page
//     into it in its own transaction (memory bounded by a page); Commit
//     moves the live pointer and writes the RV and the complete state in
//     one transaction, and keeps the replaced generation until Release
//     deletes it, so that Changes can merge-walk the two and stream the
//     differences to handlers without holding them on the heap. An open
//     that finds a staged generation deletes it and reports
//     State().RelistInterrupted with the previous content and RV intact;
//     it deletes a retained one too (the committed content is whole).
//     Vanished merge-walks the live and staged keys. A fill (BeginFill,
//     store.Filler: the relist of an empty resource, written in place so
//     that its pages are readable as they arrive) records the state
//     "filling" and no RV in meta in its first transaction, writes each
//     page to the live generation in its own, and records the RV and the
//     complete state at Commit; an aborted fill stays "filling" until a
//     Replace commits. An open that finds "filling" replaces the live
//     generation with an empty one and reports RelistInterrupted: the
//     partial content is never served nor resumed from.
//  3. The file describes itself: a resource recorded with another schema
//     version, identity, codec or fingerprint of the decoded Go type (its
//     fields, types and tags: decoding drops the fields a binary's types do
//     not know, so after an upgrade of the API types the stored objects may
//     lack fields), or unreadable metadata, is discarded on open
//     (State().Discarded and a log line say why); other index names or
//     IndexVersion rebuild the index entries from the items, in bounded
//     transactions, resumed from scratch after a crash.
//  4. Index entries agree with items: inspect.Verify checks every entry both
//     ways, every payload, every envelope RV and the counts; the crash test
//     runs it after every kill.
//  5. The disk is a cache: Open validates the file before bbolt maps it (a
//     truncated or garbage file would crash bbolt) and returns ErrCorrupt
//     for a damaged, foreign or newer (a *VersionError) file, and for a
//     file a SyncOnClose writer left unflushed when the machine restarted
//     (ErrUnflushed), which the caller moves aside (MoveAside) and
//     rebuilds; panics inside bbolt become ErrCorrupt. Open's checks take
//     a time independent of the file's size (the meta pages, the size
//     against the high water mark, the freelist Close writes, the buckets
//     Resource reads); every other page is walked in the background
//     (DB.FileCheck, Options.CheckAtOpen to walk them in Open). Until its
//     verdict a read that reaches a bad page fails with ErrCorrupt (bbolt's
//     panics and the mapping's faults are recovered in every goroutine
//     that reads it) and hands out none of its objects; corruption found
//     either way marks every resource incomplete, calls OnCorruption and
//     is recorded beside the file, so that the next Open returns
//     ErrCorrupt. A full disk returns ErrDiskFull and a read-only
//     one ErrReadOnly; the failed transaction leaves the previous content
//     and RV intact. A read that finds an object it cannot decode, or
//     whose bytes do not match their checksum, skips it, logs and counts
//     it (warmcache_store_corrupt_objects_total), marks the resource
//     incomplete in the file (the next start relists) and calls
//     ResourceOptions.OnCorruption; a damaged meta or live pointer
//     discards the resource on open.
//  6. Objects handed out are never mutated by the store; the hot tier
//     shares them between callers, who must not mutate them either (as in
//     client-go), and keeps the objects written to the store, which belong
//     to it afterwards (store.Store's ownership rule).
//
// # Reads
//
// Reads decode inside a read transaction: bbolt's bytes never escape one.
// Decoding is most of a read's cost (about 20 µs for a podgen pod in
// protobuf), and every read that returns objects does it the same way
// (decode.go): it collects a chunk of 256 envelopes in its transaction,
// aliasing bbolt's pages (no copy), takes the objects the hot tier holds,
// decodes the others on every core while the transaction is open, and
// keeps key order. List, ByIndex and Index read one snapshot in one
// transaction, decoding chunk after chunk; Scan, ScanIndex, Select and
// Vanished read a chunk per transaction and call their function outside
// any, so it may read the store, a long scan never pins the file's old
// pages, and a caller that streams holds one chunk of objects (ScanParallel
// three: the one it delivers, the next, decoded meanwhile, and one being
// decoded).
//
// What a bulk read costs is the decode of what it returns that the hot
// tier does not hold: client-go's unmodified indexer.List(), cache.ListAll
// and client-go's listers (which call them) decode every object on every
// call, so a list of all 100k podgen pods costs what decoding 100k pods on
// every core costs (see the README's readbench table) and a transient heap
// of the decoded objects (about 10.5 KB each), where client-go's indexer
// returns pointers it holds. Use warmcache's listers or store.Select for
// anything that selects.
//
// # Hot tier
//
// Point reads (Get, GetByKey) go through the hot tier: a cache of decoded
// objects bounded in bytes, one per DB shared by its resources
// (Options.HotBytes, default DefaultHotBytes, 32 MiB), or one per store
// (ResourceOptions.HotBytes); a budget of 0 disables it. It is filled by
// point reads and by the store's own writes (Add, Update, Apply,
// Transaction: the object written is what the reconcile of its event reads
// next, and keeping it costs no decode), never by bulk reads, which take
// what it holds without reordering it, so that a List does not evict what
// the point reads keep. Relists (Replace) do not fill it either.
//
// Two least-recently-used segments share the budget, as in the 2Q and ARC
// policies. What a point read decodes, or finds, goes to the main one.
// What a write puts goes to probation, and moves to the main segment when
// a point read finds it there or when the same object is written again
// soon (a rollout's pods, a flapping node's: the keys probation evicted
// are remembered). Probation's share adapts to the readers, between a
// sixteenth of the budget and all of it: a point read that misses an
// object probation evicted grows it, and each eviction from probation
// shrinks it a little. A controller that reads each object some events
// after its write thus keeps its reads served, and an informer whose
// writes nothing reads keeps a sixteenth of the budget alive instead of
// all of it. The collector marks every cached object at each of its
// cycles: a full tier of 32 MiB of decoded pods cost a churn of updates
// spread over 100k pods, none of them read, about 12 µs of CPU per update
// (informerbench, the informer's queue at 1,000), a tenth of its CPU.
//
// An object's bytes are estimated from its envelope: its length times a
// factor per codec measured on podgen pods (Go heap after a GC divided by
// envelope bytes: 2.25 for protobuf, 1 for JSON into typed objects, 5.5 for
// unstructured objects, 3 for another codec), plus the key and 160 bytes
// of bookkeeping. At 32 MiB the tier holds about 3,000 podgen pods, which
// receive about 80% of the reads of a Zipf(1.1)-skewed key choice among
// 100k.
//
// An entry is never stale. Reads that open a transaction check it against
// a hash of the envelope they read. A point read returns a "fast" entry
// without any transaction: one the store's own batch put, or one a read
// checked while no batch committed, as long as no other write transaction
// (a relist's commit, an index rebuild, another resource's relist) ran on
// the DB since; each of those bumps the DB's epoch and makes every entry
// check the file again. No other process writes the file meanwhile: a
// read-write DB holds its exclusive lock, and read-only DBs exclude
// writers. Cached objects are shared between callers, who must not mutate
// them (invariant 6).
//
// Metrics: with Options.Registerer set, warmcache_store_hot_hits_total,
// _misses_total and _evictions_total count point reads served, point reads
// that decoded, and evictions; warmcache_store_hot_bytes and _entries
// gauge the estimated bytes and the objects held; each is labelled
// resource=Identity.String(). Bulk reads do not count.
//
// Store.Select (store.SelectStore, which warmcache's listers use) decodes
// only what it returns: each item entry records the object's labels, and
// its namespace where the key does not name it, so a selection by
// namespace, labels (any selector: equality, set-based, exists, !key) or
// index walks small entries (a namespace's key range under the default
// key function, an index's entries for an index part, every entry for a
// cluster-wide label selector) and decodes the matches only, in chunks of
// 256 on every core, taking an object the hot tier holds without
// filling it. A selection costs a walk of about 0.15-0.2 µs per entry it
// examines plus a decode per object it returns (BenchmarkSelect, 10k
// podgen pods with six labels each: a cluster-wide selector of 11 pods
// 1.6-1.9 ms, 0.4 MB allocated; at 100k pods, readbench, three runs: a
// cluster-wide selector of 101 pods 22-26 ms and 1.9-2.0 MB of transient
// heap, against 69-89 ms for client-go's lister on client-go's indexer,
// and a namespace of 2,000 pods 24-35 ms). There is no label index: the
// walk of 100k entries (about 16 ms) is already below client-go's own
// filtered list of 100k objects, and a label index would add a B+tree
// entry per label to every write. The labels make an item entry about 200 bytes
// longer for a podgen pod (envelopes are 4.7 KB). client-go's unmodified
// indexer.List(), cache.ListAll and its listers decode every object (or
// every object of the namespace index) on every call.
//
// Measured with the package benchmarks (go test -run '^$' -bench .
// -count 3), 10,000 podgen pods (8 KB of JSON, 4.7 KB in protobuf) listed
// in key order, writes with the default sync policy, on a quiet 2-core VM;
// CPU time per operation (cpu-ns/op, GC included) is given beside wall
// time, since the encode and decode run on both cores. client-go ran in the
// same process.
//
//	                                 bolt                             client-go cache.NewIndexer
//	GetByKey, uniform keys           p50 19-20 µs                     p50 0.07 µs
//	GetByKey, 200 hot keys           p50 2.0 µs                       p50 0.05 µs
//	ByIndex(namespace), 200 pods     7.0 ms CPU (4.7 ms wall)         8-9 µs CPU
//	Replace of 10k pods              0.32 s CPU (0.18 s wall)         9 ms CPU (8 ms wall)
//	Apply (updates), batches of 100  47 µs CPU per pod (35 µs wall)   0.4 µs CPU per pod
//	Apply (updates), one per commit  86 µs CPU (62 µs wall)           1.4 µs CPU
//
// On a quiet machine at 100k pods (go run ./benchmarks/cmd/storebench),
// GetByKey p50 is 17.5-20 µs. Writes with the default policy, batches of
// 500, spread of six runs: a relist in key order 68k-81k pods/s, updates in
// watch order 37k-44k pods/s, adds in watch order 36k-40k pods/s (16k-24k
// with the schema 1 layout, where envelopes sat in the item leaves), 31-35
// µs CPU per added pod, most of it bbolt's commit (node spill, page writes)
// and the protobuf encode, which large batches spread over every core.
//
// A uniform GetByKey is mostly the protobuf decode of the pod (about 20 µs);
// a hit in the hot tier costs a map lookup when the entry is fast, else
// the read transaction and a hash of the stored bytes. Writes sort each batch by key (bbolt inserts in key
// order much faster) without changing its outcome.
//
// # Durability and the sync policy
//
// Writes are group commits: the informer applies what its queue holds as
// one Apply, one transaction. What a commit costs beyond that depends on
// where its pages go. A relist arrives in key order and fills leaves one
// after the other; watch events arrive in any order: an add rewrites a
// leaf of item entries and an index leaf somewhere in the file and appends
// its envelope, an update rewrites the leaf of its envelope (and, if its
// index values changed, those two leaves). Flushing those
// scattered pages is what makes every commit slow: two fdatasyncs of
// several MB each. Measured at 100k podgen pods, batches of 500 in watch
// order, relists in pages of 500, 2 cores, one run each in the same
// minutes (go run ./benchmarks/cmd/storebench -bolt-sync ...):
//
//	SyncNoFreelist  adds 22k/s, updates 20k/s, relist 49k/s (two fdatasyncs per commit)
//	SyncFull        adds 20k/s, updates 18k/s, relist 47k/s
//	SyncOnClose     adds 38k/s, updates 39k/s, relist 72k/s (no flush per commit)
//
// SyncOnClose is the default. It rests on what a crash can do to a file:
//
//   - A process crash (SIGKILL, OOM, panic) loses nothing, flushed or not:
//     every committed transaction has been written to the kernel, which
//     writes it out. The crash test kills a writer 22 times and checks
//     every invariant after each.
//   - A power loss or kernel crash can tear an unflushed file: the kernel
//     writes dirty pages in any order, so the meta page of a commit can
//     reach the disk while pages it points to do not, and the file then
//     holds a valid-looking tree with stale pages that the next start
//     would trust.
//
// So SyncOnClose keeps a state file beside the cache file (path.state,
// written durably: temporary file, fsync, rename, fsync of the directory):
// "open" with the kernel's boot id before the first unflushed commit,
// "closed" after Close flushed the file. A file still "open" from another
// boot of the machine may be torn, and Open refuses it with ErrUnflushed
// (an ErrCorrupt): the caller moves it aside and relists, as for any
// damaged file. A cache can afford that relist after a machine crash; it
// cannot afford to serve a torn file, and it should not pay for a flush per
// commit to avoid a relist that a machine crash costs anyway in a new pod.
// The state file is outside the bbolt file because a torn bbolt file can
// show stale pages, and no stale page may ever claim a clean close. A
// background flush every Options.FlushInterval (30s) finds a write error
// of the disk, which the kernel reports only to the next fsync, and records
// the file "unflushed" at once, so that even a restart in the same boot
// relists instead of trusting pages that never reached the disk.
//
// SyncNoFreelist and SyncFull flush every commit (bbolt writes the data
// pages, flushes, then writes and flushes the meta page), so a commit that
// returned survives a power loss: for files that are not a cache of
// something else. Measured (BenchmarkCommit, a commit carrying only an RV,
// on a 10k-pod file after one relist; the freed generation leaves about
// 44,000 free pages):
//
//	SyncFull        3.6-5.5 ms per commit (writes the 355 KB freelist, 2 fdatasyncs)
//	SyncNoFreelist  0.6-1.9 ms per commit (2 fdatasyncs)
//	UnsafeNoSync    0.8-2.5 ms per commit (writes the freelist, no flush)
//
// SyncOnClose and SyncNoFreelist do not write bbolt's freelist, which a
// read-write Open rebuilds by walking the file instead (BenchmarkOpen, 10k
// pods relisted twice, file check included: 29-31 ms and 24-27 ms against
// 13-14 ms for SyncFull).
// UnsafeNoSync flushes nothing, not even on Close, and its files are
// refused after a restart of the machine: only for files on a tmpfs, or
// tests.
//
// Deleting the generation a relist replaced is one DeleteBucket, measured
// at 150 ms for 10k podgen pods; deleting the keys in bounded chunks took
// 1.07 s in total with about 180 ms per 5000-key transaction, so there is
// nothing to gain from chunking.
//
// # Page size
//
// Options.PageSize sets the bbolt page size of a file Open creates; an
// existing file keeps the page size it was created with (bbolt reads it
// from the meta page), whatever the option says, and inspect.CompactTo's
// copy keeps its source's. The default, DefaultPageSize, is 16 KiB, four
// times the operating system's usual page size (bbolt's own default).
// bbolt keeps at least two entries in a leaf, whatever their size,
// allocates a node of one page from a pool and one of several pages with
// make([]byte) at every commit, and writes each dirty node with a write
// call of its own. A podgen pod's envelope is about 6.4 KB as the informer
// stores it, so the leaf holding it is about 13 KB: one 16 KiB page, or a
// node of four 4 KiB pages. Larger pages also make a large resource's
// trees shallower, with a quarter of the branch pages for an update's path
// to read and rewrite.
//
// Informer, 100,000 podgen pods, a churn of 400,000 updates spread over
// every pod, client-go's informer measured in the same runs; three runs
// per page size, alternated, on 2 shared cores (load 2.4-2.8 at the start
// of each) (go run ./benchmarks/cmd/informerbench -n 100000 -impl
// client-go,bolt -skip-server-alone -bolt-page-size N):
//
//	                                        4096            16384
//	update CPU µs/event                     87.2-97.1       76.0-81.7
//	  against client-go's in the same run   0.95-1.18x      0.81-0.97x
//	update events/s against client-go's     0.86-1.05x      1.03-1.25x
//	update allocated KB/event               47.7            33.9-34.0
//	update GC CPU µs/event                  12.3-13.4       7.9-8.2
//	cold sync CPU s                         5.05-6.25       5.04-5.29
//	cold sync peak heap MB                  183-200         161-164
//	warm restart with replay CPU s          3.17-4.20       3.60-4.79
//	410 relist CPU s, 0% changed            5.78-6.36       5.46-6.44
//	                  10% changed           6.01-6.79       5.57-7.08
//	                  every pod changed     9.44-12.6       9.67-10.7
//	file MB after cold sync, after churn    656, 666        586, 595
//
// Reads, the same pods in a store with the namespace index, two runs per
// page size, alternated (go run ./benchmarks/cmd/readbench -n 100000
// -impl client-go,bolt -bolt-page-size N; warmcache's listers, medians):
//
//	                                        4096            16384
//	List(everything), 100,000 pods ms       1,893-1,976     1,891-2,231
//	List(label selector), 101 pods ms       25.8-34.6       22.8-27.9
//	Pods(ns).List(everything), 2,000 ms     25.5-32.2       27.0-30.7
//	Pods(ns).List(selector), 3 pods ms      0.61-0.66       0.81-0.85
//	GetByKey uniform p50 µs                 20.6-22.1       21.4-22.2
//	reconcile reads p50 µs                  474-505         418-427
//
// Store writes and reads, 10,000 objects with the namespace index, the hot
// tier off, 3 runs each (BenchmarkPageSize: go test -run '^$' -bench
// PageSize ./store/bolt/); updates of scattered keys, N per Apply, per
// object; written is what the process passed to write calls (dirty pages
// and the meta page):
//
//	podgen pods (4.6 KB payload)      4096         8192         16384
//	update, N=1: CPU µs               90-119       127-156      129-154
//	             written KiB          40.0         72.0         128.0
//	             allocated KiB        45.8         61.9         71.7
//	update, N=10: CPU µs              40-43        57-76        37-40
//	              written KiB         18.4         27.5         34.6
//	              allocated KiB       32.6         43.2         32.5
//	update, N=100: CPU µs             31-41        32-47        26-33
//	               written KiB        13.6         17.8         17.9
//	               allocated KiB      24.3         28.2         11.5
//	GetByKey CPU µs                   24.5-27.8    23.6-27.2    23.3-24.4
//	ByIndex (200 pods) CPU ms         5.9-6.4      6.7-7.3      6.8-8.5
//	warm Open + Resource CPU ms       2.5-4.4      2.6-4.7      2.8-5.0
//	file after the list, MiB          65.6         84.8         58.9
//
//	configmaps (446 B payload)        4096         8192         16384
//	update, N=1: CPU µs               39-46        74-79        110-113
//	             written KiB          32.0         64.0         112.0
//	             allocated KiB        26.2         38.6         52.8
//	update, N=10: CPU µs              14.9-17.1    15.6-17.2    16.4-17.3
//	              written KiB         9.1          15.1         25.6
//	update, N=100: CPU µs             10.1-12.1    11.1-11.7    11.3-14.9
//	               written KiB        4.6          8.0          14.6
//	GetByKey CPU µs                   5.7-6.1      5.8-6.5      5.4-6.4
//	ByIndex (200 configmaps) CPU ms   0.52-0.59    0.39-0.50    0.41-0.45
//	warm Open + Resource CPU ms       1.7-2.9      1.5-2.9      1.5-2.8
//	file after the list, MiB          9.6          9.6          9.7
//
// At the sizes warmcache is for, 16 KiB is the better page: at 100k pods
// an update spread over the resource costs 15% less CPU and 29% less
// allocation, which puts the informer's update rate ahead of client-go's
// in every run instead of at parity, the file is 11% smaller, and the
// listers' reads cost the same (a namespace's selector list of a few pods
// reads a larger index page: 0.2 ms more). At 30,000 pods the gain was
// 5-10% of the CPU (seven runs each of informerbench -n 30000 -impl
// bolt -relist= -skip-server-alone -bolt-page-size N, at an earlier
// version): it grows with the resource, as its trees deepen. What
// 16 KiB costs is the commit of one object at a time, which a quiet
// cluster's watch makes: about 1.35 times the CPU for a pod and 2.4-2.9
// times for a configmap (35-70 µs more per commit), and every commit
// writes 1.3-3.5 times the bytes into the page cache (index, item and
// branch pages are rewritten whole). In the store benchmark at 10,000
// pods a namespace's 200 pods (ByIndex) took about a quarter more CPU
// (6.8-8.5 ms against 5.9-6.4), and in the informer's runs a warm
// restart's replay took about a tenth more CPU (3.60-4.99 s against
// 3.17-4.60, six runs each; not explained: ScanParallel alone showed no
// consistent difference).
// A small resource also takes more room: at least one 16 KiB page for
// each of its buckets that does not fit inline (the snapshot CLI's test
// file of two pods and an empty resource is 272 KiB instead of 76 KiB).
// 8 KiB is worse than 4 KiB almost everywhere and has none of 16 KiB's
// gains under churn (only its commit of one object costs less than with
// 16 KiB): a leaf keeps at least two pod envelopes (13 KB), so it still
// spans two pages, and the file of pods is 29% larger. So a file that
// mostly holds small objects (configmaps, leases, endpoint slices) on a
// quiet cluster, where the bytes written per commit matter more than the
// CPU of a churn, may set 4096 (factory.Options.Bolt.PageSize); a file
// created before keeps its page size until it is recreated (removed, or
// moved aside, and relisted). DB.PageSize and `snapshot info` tell which
// page size a file has.
//
// # Concurrency
//
// A DB and its Stores are safe for concurrent use. bbolt allows one writer
// at a time per file and any number of readers. A read-write DB holds an
// exclusive lock on the file (ErrLocked for another DB, in this process or
// another, after Options.Timeout); read-only DBs share it. Long read
// transactions (Backup, List of a large resource, inspect.Verify) do not
// block writers, except a writer that must grow the file, which waits for
// them.
//
// # Upgrades
//
// A release that changes the layout of a resource bumps its schema
// version; the first start of the new release discards each resource of
// another version (invariant 3) and its informer relists it: one relist
// per resource, the cost of a cold start, and nothing to do by hand.
// A downgrade does the same the other way. Schema version 3 (the empty
// object key, which version 2 could not store) and schema version 4 (the
// namespace and labels in item entries, for Select) are such changes: a
// file of schema 3 is relisted once on the first start of a release that
// writes schema 4, and then selects without decoding. Schema version 5
// records the cluster and the transform version of each resource
// (ResourceOptions.Cluster and TransformVersion); a file of schema 4 is
// relisted once. Schema version 7 names index buckets so that an index may
// be named "" and files index values over 1 KiB under a hash, so that
// values of any length can be indexed; a file of schema 6 is relisted once.
//
// # Inspection
//
// DB.Backup and DB.BackupHandler copy the file while writes go on; the
// handler serves only the callers its Authorizer allows (package backupauth
// has a Kubernetes and a static-token one). Package
// store/bolt/inspect reads a file as a tool does: it lists what the file
// records, opens a resource read-only with the codec named in the file and
// its recorded indexes, and checks the file's structure and invariant 4.
package bolt
