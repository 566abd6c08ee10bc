package bolt

import (
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/vmihailenco/msgpack/v5"
	bbolt "go.etcd.io/bbolt"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2/ktesting"

	"github.com/warmcache/warmcache/store/bolt/internal/layout"
)

// podWithNewField stands for corev1.Pod after an API upgrade added a field.
type podWithNewField struct {
	corev1.Pod
	Added string `json:"added,omitempty" protobuf:"bytes,99,opt,name=added"`
}

// TestSchema5DiscardedOnce opens a resource written by a binary of schema
// version 5, which had no checksums (its meta a bare msgpack map, its live
// pointer 8 bytes, its envelopes 3-element arrays): the data is discarded
// with a log line saying why, and the relisted data is kept by the next
// open.
func TestSchema5DiscardedOnce(t *testing.T) {
	ctx := context.Background()
	path := tempPath(t)
	db, err := Open(ctx, path, Options{Sync: UnsafeNoSync})
	must(t, err)
	s := openPods(t, db, namespaceIndexers())
	must(t, s.Replace([]interface{}{mkPod("ns", "a", "5"), mkPod("ns", "b", "5")}, "5"))
	must(t, db.Close())
	rawUpdate(t, path, func(tx *bbolt.Tx) error {
		res, g := rawLive(t, tx)
		m, err := layout.DecodeMeta(res.Get(layout.MetaKey))
		must(t, err)
		m.Schema = 5
		legacy, err := msgpack.Marshal(&m)
		must(t, err)
		must(t, res.Put(layout.MetaKey, legacy))
		must(t, res.Put(layout.LiveKey, slices.Clone(res.Get(layout.LiveKey)[:8])))
		if gen, err := layout.LiveGen(res); err == nil {
			t.Fatalf("an 8-byte live pointer was read as generation %d", gen)
		}
		// An envelope as schema 5 wrote it: [rv, uid, payload].
		env, err := layout.DecodeEnvelope(rawEnvelope(t, g, "ns/a"))
		must(t, err)
		old := append([]byte{0x93}, layout.AppendStr(nil, env.RV)...)
		old = binary.BigEndian.AppendUint32(append(layout.AppendStr(old, env.UID), 0xc6), uint32(len(env.Payload)))
		setEnvelope(t, g, "ns/a", append(old, env.Payload...))
		return nil
	})
	if m := rawDecodeMeta(t, path); m.Schema != 5 {
		t.Fatalf("legacy meta decodes with schema %d, want 5", m.Schema)
	}

	logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.BufferLogs(true)))
	db = openDB(t, path, Options{Sync: UnsafeNoSync, Logger: logger})
	s = openPods(t, db, namespaceIndexers())
	want := fmt.Sprintf("schema version 5 recorded, this binary uses %d", layout.SchemaVersion)
	if st := mustState(t, s); st.Discarded != want || st.Objects != 0 || st.Complete || st.RV != "" {
		t.Errorf("state = %+v, want discarded for %q, empty", st, want)
	}
	logs := logger.GetSink().(ktesting.Underlier).GetBuffer().String()
	if !strings.Contains(logs, "Discarded the cached data of the resource; it will be relisted") || !strings.Contains(logs, want) {
		t.Errorf("no log line saying why the data was discarded:\n%s", logs)
	}
	must(t, s.Replace([]interface{}{mkPod("ns", "a", "6")}, "6"))
	must(t, db.Close())

	db = openDB(t, path, Options{Sync: UnsafeNoSync})
	s = openPods(t, db, namespaceIndexers())
	if st := mustState(t, s); st.Discarded != "" || st.Objects != 1 || !st.Complete || st.RV != "6" {
		t.Errorf("state after the relist = %+v, want the relisted data kept", st)
	}
	verifyClean(t, db)
}

// rawDecodeMeta decodes the pods resource's meta of the file at path,
// which must not be open.
func rawDecodeMeta(t *testing.T, path string) layout.Meta {
	t.Helper()
	var m layout.Meta
	rawUpdate(t, path, func(tx *bbolt.Tx) error {
		var err error
		m, err = layout.DecodeMeta(tx.Bucket([]byte(podsID.String())).Get(layout.MetaKey))
		return err
	})
	return m
}
