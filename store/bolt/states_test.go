package bolt

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"testing"

	"go.etcd.io/bbolt"
	corev1 "k8s.io/api/core/v1"

	"github.com/warmcache/warmcache/store"
)

func TestReadStates(t *testing.T) {
	db := openDB(t, tempPath(t), Options{})
	s := openPods(t, db, nil)
	// Enough objects for the decode to run on several goroutines.
	var keys []string
	for i := range 300 {
		name := fmt.Sprintf("p%03d", i)
		must(t, s.Add(mkPod("ns", name, fmt.Sprint(10+i))))
		keys = append(keys, "ns/"+name)
	}
	keys = append(keys, "ns/missing")
	var asked []int
	states, err := s.ReadStates(keys, func(i int, rv string) bool {
		asked = append(asked, i)
		return i%3 == 0
	})
	must(t, err)
	if len(states) != len(keys) {
		t.Fatalf("%d states for %d keys", len(states), len(keys))
	}
	if want := len(keys) - 1; len(asked) != want || slices.Contains(asked, len(keys)-1) {
		t.Fatalf("want asked for %d keys, the stored ones only; asked for %d", want, len(asked))
	}
	for i, st := range states[:len(keys)-1] {
		if !st.Exists || st.RV != fmt.Sprint(10+i) {
			t.Fatalf("state of %s = %+v; want stored at %d", keys[i], st, 10+i)
		}
		switch {
		case i%3 == 0 && (st.Obj == nil || st.Obj.(*corev1.Pod).Name != fmt.Sprintf("p%03d", i)):
			t.Fatalf("object of %s = %v; want the stored pod", keys[i], st.Obj)
		case i%3 != 0 && st.Obj != nil:
			t.Fatalf("object of %s read, but not wanted", keys[i])
		}
	}
	if st := states[len(keys)-1]; st.Exists || st.RV != "" || st.Obj != nil {
		t.Fatalf("state of a missing key = %+v; want none", st)
	}
}

// One damaged object fails the read, is reported like any damaged read,
// and never comes back as an object.
func TestReadStatesOfADamagedObject(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cache.db") // left damaged
	db := openDB(t, path, Options{})
	s := openPods(t, db, nil)
	for _, p := range []string{"a", "b"} {
		must(t, s.Add(mkPod("ns", p, "1")))
	}
	must(t, db.Close())
	rawUpdate(t, path, func(tx *bbolt.Tx) error {
		_, g := rawLive(t, tx)
		env := append([]byte(nil), rawEnvelope(t, g, "ns/b")...)
		env[len(env)/2] ^= 0xff // inside the payload: the checksum fails
		setEnvelope(t, g, "ns/b", env)
		return nil
	})
	var reported []error
	db = openDB(t, path, Options{})
	s, err := db.Resource(t.Context(), ResourceOptions{Identity: podsID, Codec: podCodec, OnCorruption: func(err error) { reported = append(reported, err) }})
	must(t, err)
	for _, want := range []bool{false, true} {
		states, err := s.ReadStates([]string{"ns/a", "ns/b"}, func(int, string) bool { return want })
		if !errors.Is(err, store.ErrCorrupt) || states != nil {
			t.Fatalf("ReadStates (objects wanted: %t) = %v, %v; want an error wrapping ErrCorrupt", want, states, err)
		}
	}
	if len(reported) == 0 {
		t.Fatal("the damaged object was not reported")
	}
}
