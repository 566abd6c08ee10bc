package storetest

import (
	"context"
	"slices"
	"testing"
)

// testEmptyKey: client-go's stores accept the empty string as a key (an
// object without namespace and name under the default key function), and
// so must every store: point reads and writes, lists, indexes, scans in
// key order (the empty key first), resourceVersions, and a relist that
// drops it.
func testEmptyKey(t *testing.T, h harness) {
	ctx := context.Background()
	s := h.open(t, nil)
	empty := mkPod("", "", "1", users("ernie"))
	if k := keyOf(t, empty); k != "" {
		t.Fatalf("key of a pod without namespace and name = %q, want the empty key", k)
	}
	other := mkPod("ns", "a", "2", users("ernie"))
	assertAbsent(t, s, "")
	mustAdd(t, s, empty, other)
	assertContent(t, s, empty, other)
	keys, err := s.IndexKeys(indexUsers, "ernie")
	if err != nil {
		t.Fatalf("IndexKeys(byUser, ernie): %v", err)
	}
	assertKeys(t, "IndexKeys(byUser, ernie)", keys, "", "ns/a")
	got, err := s.ByIndex(indexNamespace, "")
	if err != nil {
		t.Fatalf("ByIndex(namespace, \"\"): %v", err)
	}
	assertObjects(t, `ByIndex(namespace, "")`, got, empty)
	if rv, exists, err := s.ResourceVersionOf(""); err != nil || !exists || rv != "1" {
		t.Errorf(`ResourceVersionOf("") = %q, %v, %v; want "1"`, rv, exists, err)
	}

	if scanned, _ := scanAll(t, "Scan", s.Scan); !slices.Equal(scanned, []string{"", "ns/a"}) {
		t.Errorf("Scan keys = %q, want [\"\" ns/a] in key order", scanned)
	}
	if scanned, _ := scanAll(t, "ScanIndex", byIndex(s, indexUsers, "ernie")); !slices.Equal(scanned, []string{"", "ns/a"}) {
		t.Errorf("ScanIndex(byUser, ernie) keys = %q, want [\"\" ns/a] in key order", scanned)
	}

	updated := withRV(empty, "3")
	updated.Annotations[annotationUsers] = "bert"
	if err := s.Update(updated); err != nil {
		t.Fatalf("Update: %v", err)
	}
	assertContent(t, s, updated, other)
	keys, err = s.IndexKeys(indexUsers, "bert")
	if err != nil {
		t.Fatalf("IndexKeys(byUser, bert): %v", err)
	}
	assertKeys(t, "IndexKeys(byUser, bert) after the update", keys, "")

	// A relist without it reports it vanished and drops it.
	r := begin(t, s)
	if err := r.Add(ctx, other); err != nil {
		t.Fatalf("Replace.Add: %v", err)
	}
	scanned, objs := scanAll(t, "Vanished", r.Vanished)
	if !slices.Equal(scanned, []string{""}) {
		t.Errorf("Vanished keys = %q, want the empty key", scanned)
	}
	assertObjects(t, "Vanished objects", objs, updated)
	if err := r.Commit(ctx, "4"); err != nil {
		t.Fatalf("Commit: %v", err)
	}
	assertContent(t, s, other)

	// A relist with it keeps it; Delete removes it.
	r = begin(t, s)
	if err := r.Add(ctx, updated, other); err != nil {
		t.Fatalf("Replace.Add: %v", err)
	}
	if err := r.Commit(ctx, "5"); err != nil {
		t.Fatalf("Commit: %v", err)
	}
	assertContent(t, s, updated, other)
	if err := s.Delete(updated); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	assertContent(t, s, other)
	assertAbsent(t, s, "")
}
