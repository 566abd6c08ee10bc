package inspect

import (
	"context"
	"fmt"

	bbolt "go.etcd.io/bbolt"

	"github.com/warmcache/warmcache/store/bolt"
	"github.com/warmcache/warmcache/store/bolt/internal/verify"
)

// ProblemKind classifies a Problem found by Verify.
type ProblemKind string

// The kinds of Problem.
const (
	// ProblemMeta: the resource's metadata is unreadable, names another
	// identity than its bucket, or records another schema version (the
	// rest of the resource is then not checked).
	ProblemMeta ProblemKind = verify.Meta
	// ProblemLayout: a bucket of the layout is missing or unexpected, or
	// the envelope sequence is behind the envelope ids in use.
	ProblemLayout ProblemKind = verify.Layout
	// ProblemItem: an item's entry is malformed, its envelope is missing
	// or shared with another item, its envelope or payload does not
	// decode, or the payload's resourceVersion differs from the envelope's.
	ProblemItem ProblemKind = verify.Item
	// ProblemIndexWithoutItem: an index entry names a key with no item.
	ProblemIndexWithoutItem ProblemKind = verify.IndexWithoutItem
	// ProblemIndexWithoutReverse: an index entry is not in its item's
	// reverse entry (the index values recorded in the item entry).
	ProblemIndexWithoutReverse ProblemKind = verify.IndexWithoutReverse
	// ProblemReverseWithoutIndex: an item's reverse entry does not decode,
	// names an index entry that does not exist, or an index that is not
	// recorded.
	ProblemReverseWithoutIndex ProblemKind = verify.ReverseWithoutIndex
	// ProblemBlobWithoutItem: an envelope is referenced by no item.
	ProblemBlobWithoutItem ProblemKind = verify.BlobWithoutItem
	// ProblemIndexValues: an index function applied to the decoded item
	// yields other values than those recorded (only checked for resources
	// open with Resource on the DB, whose functions are known).
	ProblemIndexValues ProblemKind = verify.IndexValues
	// ProblemSelectPart: an item entry's select part (the namespace and
	// labels that selections read without decoding) does not parse or
	// differs from the decoded item's.
	ProblemSelectPart ProblemKind = verify.SelectPart
	// ProblemCount: the recorded number of objects differs from the
	// number of items.
	ProblemCount ProblemKind = verify.Count
	// ProblemNotDecoded: no codec is known for the resource (see
	// Verify's codecs), so its payloads were not checked.
	ProblemNotDecoded ProblemKind = verify.NotDecoded
	// ProblemChecksum: stored bytes do not match their checksum: an
	// item's envelope (its payload, resourceVersion or UID: Key names
	// the item), an item entry (Key), or an index entry (Index, Value
	// and Key as stored, which the damage may have changed). The
	// record is not checked further; a store's reads skip it.
	ProblemChecksum ProblemKind = verify.Checksum
)

// Problem is one inconsistency found by Verify.
type Problem struct {
	// Resource is the bucket name of the resource (Identity.String()).
	Resource string
	Kind     ProblemKind
	// Key is the object key concerned, Index and Value the index entry,
	// where they apply.
	Key, Index, Value string
	// Detail says what is wrong.
	Detail string
}

func (p Problem) String() string {
	return verify.Problem{Resource: p.Resource, Kind: string(p.Kind), Key: p.Key, Index: p.Index, Value: p.Value, Detail: p.Detail}.String()
}

// Verify checks every resource of db's file against invariant 4 and
// reports each inconsistency to report: every envelope, item entry and
// index entry matches its checksum (a resource's meta and live pointer
// too: ProblemMeta, ProblemLayout); every index entry has its item and
// agrees with the item's reverse entry; every reverse entry has its index
// entries; every item has an envelope of its own and every envelope an
// item; every item decodes, its envelope's resourceVersion is the decoded
// object's and its entry records the object's namespace and labels; for resources open on db with DB.Resource, the index
// functions give the recorded values; the recorded object count is the
// number of items. Payloads are decoded with the codec of a store open on
// db, else with the one codecs resolves from the recorded codec name
// (codecs may be nil: such payloads are reported ProblemNotDecoded). The
// live generation is checked; a staged Replace is not.
//
// It reads one consistent snapshot (one read transaction) and every item,
// so it takes time proportional to the file. It returns an error only when
// it cannot read (closed DB, a page bbolt cannot read, ctx done).
func Verify(ctx context.Context, db *bolt.DB, codecs CodecResolver, report func(Problem)) error {
	opts := verify.Options{
		Known:  file(db).Known(),
		Codecs: codecs,
		Report: func(p verify.Problem) {
			report(Problem{Resource: p.Resource, Kind: ProblemKind(p.Kind), Key: p.Key, Index: p.Index, Value: p.Value, Detail: p.Detail})
		},
	}
	err := file(db).View("verify", func(tx *bbolt.Tx) error { return verify.Tx(ctx, tx, opts) })
	if err != nil {
		return fmt.Errorf("inspect: verify %s: %w", db.Path(), err)
	}
	return nil
}
