// Package layout is the on-disk layout of a warmcache file, shared by
// package bolt, which reads and writes it, and package inspect, which
// checks and describes it: the names of buckets and keys, the versions,
// the encodings of the format marker, a resource's meta, item keys (which
// let the empty object key be stored), item entries and their select
// parts, envelopes, reverse entries and index keys, the generations of a
// resource's content, and the checksums that guard them.
//
// Checksums: every envelope, item entry, index entry, meta and live
// pointer carries a CRC-32C of its bytes, bound to the key it is stored
// under where a misplaced copy would read as valid (checksum.go lists what
// each covers and why CRC-32C). The functions that hand out a record's
// content verify its checksum first (EnvelopeOf, ParseItemEntry,
// ItemBlobID, IndexSum.Verify, DecodeMeta, LiveGen) and return an error
// matching ErrChecksum and store.ErrCorrupt on a mismatch; DecodeEnvelope
// and EnvelopeRV parse an envelope that EnvelopeOf already verified.
//
// Byte slices read from bbolt alias the transaction's memory: every
// function here that returns part of its input says so, and such bytes
// must not escape the transaction.
package layout
