package layout

import (
	"encoding/binary"
	"path/filepath"
	"strings"
	"testing"

	bbolt "go.etcd.io/bbolt"
)

// CheckSequence finds an envelope id above the sequence, and returns in a
// write transaction whose deletes emptied every leaf of the blobs bucket
// (where bbolt's Cursor.Last, v1.4.3, loops without end).
func TestCheckSequence(t *testing.T) {
	db, err := bbolt.Open(filepath.Join(t.TempDir(), "seq.db"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	const n = 200
	val := make([]byte, 200) // n of them fill several leaf pages
	id := func(i uint64) []byte { return binary.BigEndian.AppendUint64(nil, i) }
	err = db.Update(func(tx *bbolt.Tx) error {
		b, err := tx.CreateBucket([]byte("blobs"))
		if err != nil {
			return err
		}
		for i := uint64(1); i <= n; i++ {
			if err := b.Put(id(i), val); err != nil {
				return err
			}
		}
		return b.SetSequence(n)
	})
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bbolt.Tx) error {
		g := &Generation{Blobs: tx.Bucket([]byte("blobs"))}
		if err := g.CheckSequence(); err != nil {
			t.Errorf("sequence at the last id: %v", err)
		}
		if err := g.Blobs.SetSequence(n - 1); err != nil {
			return err
		}
		if err := g.CheckSequence(); err == nil || !strings.Contains(err.Error(), "envelope sequence 199 is below envelope id 200") {
			t.Errorf("sequence below the last id: %v", err)
		}
		for i := uint64(1); i <= n; i++ {
			if err := g.Blobs.Delete(id(i)); err != nil {
				return err
			}
		}
		if err := g.CheckSequence(); err != nil {
			t.Errorf("every envelope deleted: %v", err)
		}
		if err := g.Blobs.Put(append(id(n), 'x'), val); err != nil {
			return err
		}
		if err := g.CheckSequence(); err == nil || !strings.Contains(err.Error(), "malformed envelope id") {
			t.Errorf("a malformed id above the sequence: %v", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
