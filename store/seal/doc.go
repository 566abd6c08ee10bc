// Package seal encrypts the objects a cache file stores, per resource,
// with AES-256-GCM under keys the user controls.
//
// A sealed resource's payloads (the whole encoded object: data, spec,
// annotations, labels, managed fields) are encrypted by Codec, a
// codec.Bound wrapper around the resource's codec. Each payload records
// the ID of the key that sealed it and is authenticated together with its
// place in the file: the resource, the object's key, and the
// resourceVersion and UID its envelope records. A payload copied to
// another object or resource, altered, or truncated does not decode; it is
// never served.
//
// What stays in clear, because the cache needs it without a key to work
// (a relist compares resourceVersions without decoding; a selection reads
// namespaces and labels without decoding): the object's key (namespace and
// name), its resourceVersion and UID, its labels (select pushdown), the
// values of the informer's indexes (the namespace index by default; an
// index function the user adds records what it returns), and the
// resource's identity and counts. Everything else of the object, in
// particular a Secret's data and its annotations (kubectl's
// last-applied-configuration annotation holds the whole Secret), is only
// in the sealed payload.
//
// Keys come from a KeyProvider: FromFile (a mounted Kubernetes Secret),
// FromEnv, or Static. The first key seals every new write; every key
// opens what it sealed. A key's ID (16 hexadecimal digits) is derived
// from it by a one-way function and is safe to log.
//
// Rotation: put the new key first and keep the old one. New writes use the
// new key at once; when the file is next opened, a resource that still
// holds objects sealed with an older key is marked incomplete and
// relisted, which rewrites every object with the new key in one atomic
// switch (a crash in the middle leaves the old, readable content). Once
// `snapshot info` shows no object under the old key, remove it. A key
// that is missing or wrong (an object sealed with a key not configured)
// makes the store discard that resource's data when it opens, with a log
// line, and relist it.
//
// Each key seals with random 96-bit nonces; NIST SP 800-38D bounds their
// use to 2^32 payloads per key (about 40,000 relists of 100,000 objects):
// rotate well before.
package seal
