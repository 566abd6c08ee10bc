package informer

import (
	"fmt"
	"testing"
)

func TestKeyFilterNeverMissesAKeyItHolds(t *testing.T) {
	f := newKeyFilter()
	const n = 50000
	for i := range n {
		if f.add(fmt.Sprintf("ns-%d/pod-%d", i%37, i)) && i == 0 {
			t.Fatal("an empty filter claims to hold a key")
		}
	}
	for i := range n {
		if !f.add(fmt.Sprintf("ns-%d/pod-%d", i%37, i)) {
			t.Fatalf("key %d added before is not reported as held", i)
		}
	}
}

func TestKeyFilterFalsePositivesStayRare(t *testing.T) {
	f := newKeyFilter()
	const n = 100000
	for i := range n {
		f.add(fmt.Sprintf("ns/held-%d", i))
	}
	maybe := 0
	for i := range n {
		if f.add(fmt.Sprintf("ns/other-%d", i)) {
			maybe++
		}
	}
	// About 0.05% per filter of the series, a dozen filters at most.
	if maybe > n/100 {
		t.Fatalf("%d of %d keys never added reported as maybe held", maybe, n)
	}
	bytes := 0
	for _, b := range f.parts {
		bytes += 8 * len(b.bits)
	}
	if per := float64(bytes) / (2 * n); per > 5 {
		t.Fatalf("%.1f bytes per key", per)
	}
}
