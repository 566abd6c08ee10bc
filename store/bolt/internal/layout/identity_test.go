package layout

import (
	"bytes"
	"testing"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/warmcache/warmcache/store"
)

// TestIdentityRecord checks that a meta records its identity as it always
// did, a map of every field under its msgpack name (record), so that
// files written before and after read alike.
func TestIdentityRecord(t *testing.T) {
	id := Identity{Group: "apps", Version: "v1", Resource: "deployments", Kind: "Deployment",
		Scope: store.Scope{Namespace: "ns", LabelSelector: "a=b", FieldSelector: "x=y", Shard: "s1"}}
	type metaBefore struct {
		Schema   int    `msgpack:"schema"`
		Identity record `msgpack:"identity"`
		Codec    string `msgpack:"codec"`
	}
	type metaNow struct {
		Schema   int      `msgpack:"schema"`
		Identity Identity `msgpack:"identity"`
		Codec    string   `msgpack:"codec"`
	}
	before, err := msgpack.Marshal(&metaBefore{Schema: 7, Codec: "protobuf", Identity: record{Group: "apps", Version: "v1", Resource: "deployments",
		Kind: "Deployment", Namespace: "ns", LabelSelector: "a=b", FieldSelector: "x=y", Shard: "s1"}})
	if err != nil {
		t.Fatal(err)
	}
	now, err := msgpack.Marshal(&metaNow{Schema: 7, Codec: "protobuf", Identity: id})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(before, now) {
		t.Fatalf("identity encoded as\n%x, the file format has\n%x", now, before)
	}
	var got metaNow
	if err := decodeAll(before, &got); err != nil || got.Identity != id {
		t.Fatalf("decoded %+v, %v; want %+v", got.Identity, err, id)
	}
	m := Meta{Schema: SchemaVersion, Identity: id, Codec: "protobuf"}
	b, err := EncodeMeta(&m)
	if err != nil {
		t.Fatal(err)
	}
	if dm, err := DecodeMeta(b); err != nil || dm.Identity != id {
		t.Fatalf("DecodeMeta = %+v, %v", dm.Identity, err)
	}
}
