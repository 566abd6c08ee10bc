// Package layout is the on-disk layout of a warmcache file, shared by
// package bolt, which reads and writes it, and package inspect, which
// checks and describes it: the names of buckets and keys, the versions,
// the encodings of the format marker, a resource's meta, item keys (which
// let the empty object key be stored), item entries and their select
// parts, envelopes, reverse entries and index keys, and the generations of
// a resource's content.
//
// Byte slices read from bbolt alias the transaction's memory: every
// function here that returns part of its input says so, and such bytes
// must not escape the transaction.
package layout
