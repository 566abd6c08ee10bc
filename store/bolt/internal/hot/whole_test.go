package hot

import (
	"fmt"
	"slices"
	"testing"
)

// wholePart returns a part of a tier that holds n entries of envLen
// bytes, its epoch, and fills it with k000..k<n-1> read in one bulk read
// that no write overlapped: the part is whole.
func wholePart(t *testing.T, n int) (*Part, *Epoch) {
	t.Helper()
	one := Cost("protobuf", "k000", envLen)
	tier := New(int64(n)*one + one/2)
	epoch := new(Epoch)
	p := tier.Part("protobuf", nopMetrics{}, epoch)
	st := p.Stamp()
	for i := range n {
		k := fmt.Sprintf("k%03d", i)
		p.Fill(k, 1, envLen, k, st, n)
	}
	if !p.Complete(st, n) {
		t.Fatal("a bulk read of every object that no write overlapped left the part not whole")
	}
	return p, epoch
}

// keysOf returns the keys Whole gives for prefix, or nil and false.
func keysOf(p *Part, prefix string) ([]string, bool) {
	var keys []string
	ok := p.Whole(prefix, func(key string, obj interface{}) {
		if obj != key {
			panic(fmt.Sprintf("key %s holds %v", key, obj))
		}
		keys = append(keys, key)
	})
	return keys, ok
}

// TestWholeFollowsCommits checks that a whole part answers in key order
// and stays whole through the store's batches: upserts, adds and deletes.
func TestWholeFollowsCommits(t *testing.T) {
	p, _ := wholePart(t, 6)
	if keys, ok := keysOf(p, ""); !ok || !slices.Equal(keys, []string{"k000", "k001", "k002", "k003", "k004", "k005"}) {
		t.Fatalf("Whole = %v, %t", keys, ok)
	}
	p.Begin()
	p.Committed(slices.Values([]Write{
		{Key: "k001", Delete: true},
		{Key: "k003", Sum: 2, EnvLen: envLen, Obj: "k003"},
		{Key: "j000", Sum: 1, EnvLen: envLen / 2, Obj: "j000"},
	}))
	if keys, ok := keysOf(p, ""); !ok || !slices.Equal(keys, []string{"j000", "k000", "k002", "k003", "k004", "k005"}) {
		t.Fatalf("Whole after a batch = %v, %t", keys, ok)
	}
	if keys, ok := keysOf(p, "k00"); !ok || !slices.Equal(keys, []string{"k000", "k002", "k003", "k004", "k005"}) {
		t.Fatalf("Whole(k00) = %v, %t", keys, ok)
	}
	p.Begin()
	p.Committed(slices.Values([]Write{{Key: "k001", Sum: 1, EnvLen: envLen / 2, Obj: "k001"}}))
	if keys, ok := keysOf(p, "k001"); !ok || !slices.Equal(keys, []string{"k001"}) {
		t.Fatalf("Whole(k001) after it was written again = %v, %t", keys, ok)
	}
}

// TestWholeLost checks what makes a part no longer whole: another write
// to the file (the epoch), an eviction, a point read that leaves an entry
// not fast, Clear.
func TestWholeLost(t *testing.T) {
	for _, c := range []struct {
		name string
		lose func(p *Part, epoch *Epoch)
	}{
		{"epoch", func(_ *Part, epoch *Epoch) { epoch.Begin(); epoch.End() }},
		{"eviction", func(p *Part, _ *Epoch) {
			p.Begin()
			p.Committed(slices.Values([]Write{{Key: "k999", Sum: 1, EnvLen: envLen * 3, Obj: "k999"}}))
		}},
		{"slow point read", func(p *Part, _ *Epoch) {
			st := p.Stamp()
			p.Begin()
			p.Committed(slices.Values([]Write(nil)))
			p.Put("k002", 1, envLen, "k002", st)
		}},
		{"clear", func(p *Part, _ *Epoch) { p.Clear() }},
		{"object larger than the budget stored", func(p *Part, _ *Epoch) {
			p.Begin()
			p.Committed(slices.Values([]Write{{Key: "k009", Sum: 1, EnvLen: 1 << 20, Obj: "k009"}}))
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, epoch := wholePart(t, 4)
			c.lose(p, epoch)
			if keys, ok := keysOf(p, ""); ok {
				t.Errorf("Whole = %v after %s", keys, c.name)
			}
		})
	}
}

// TestCompleteNeedsQuiet checks that a bulk read overlapped by a write
// (a store's batch or another write to the file, begun or ended while it
// read, or under way when it ends) does not make the part whole, nor does
// one that missed objects, and that Fill never evicts.
func TestCompleteNeedsQuiet(t *testing.T) {
	for _, c := range []struct {
		name             string
		during, complete func(p *Part, epoch *Epoch)
	}{
		{"batch begun", func(p *Part, _ *Epoch) { p.Begin() }, nil},
		{"batch committed", func(p *Part, _ *Epoch) {
			p.Begin()
			p.Committed(slices.Values([]Write{{Key: "k000", Sum: 2, EnvLen: envLen, Obj: "k000"}}))
		}, nil},
		{"batch aborted", func(p *Part, _ *Epoch) { p.Begin(); p.Aborted() }, nil},
		{"batch under way", nil, func(p *Part, _ *Epoch) { p.Begin() }},
		{"other write", func(_ *Part, epoch *Epoch) { epoch.Begin(); epoch.End() }, nil},
		{"other write under way", nil, func(_ *Part, epoch *Epoch) { epoch.Begin() }},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, p := newTestPart(4, nopMetrics{})
			if c.complete != nil {
				// Under way before the read began, and when it ends.
				c.complete(p, p.epoch)
			}
			st := p.Stamp()
			p.Fill("k000", 1, envLen, "k000", st, 2)
			if c.during != nil {
				c.during(p, p.epoch)
			}
			p.Fill("k001", 1, envLen, "k001", st, 2)
			if p.Complete(st, 2) || p.IsWhole() {
				t.Error("a bulk read overlapped by a write made the part whole")
			}
		})
	}
	_, p := newTestPart(2, nopMetrics{})
	st := p.Stamp()
	for i := range 3 {
		k := fmt.Sprintf("k%03d", i)
		p.Fill(k, 1, envLen, k, st, 2) // the store counted 2 when the read began
	}
	if p.Len() != 2 {
		t.Errorf("Fill evicted: %d entries, want 2", p.Len())
	}
	if p.Complete(st, 3) {
		t.Error("a part missing an object is whole")
	}
	_, p = newTestPart(2, nopMetrics{})
	p.Fill("k000", 1, envLen, "k000", p.Stamp(), 3)
	if p.Len() != 0 {
		t.Error("Fill cached an object of a store that does not fit in the budget")
	}
}

// TestWholeOrderBounded checks that an order holds a bounded number of
// removed entries, and none of their objects, however many objects the
// store's batches create and delete between bulk reads.
func TestWholeOrderBounded(t *testing.T) {
	p, _ := wholePart(t, 4)
	for i := range 1000 {
		k := fmt.Sprintf("j%04d", i)
		p.Begin()
		p.Committed(slices.Values([]Write{{Key: k, Sum: 1, EnvLen: envLen / 4, Obj: k}}))
		p.Begin()
		p.Committed(slices.Values([]Write{{Key: k, Delete: true}}))
	}
	p.tier.mu.Lock()
	held := len(p.order.sorted) + len(p.order.added)
	for _, e := range append(p.order.sorted, p.order.added...) {
		if e.removed && e.obj != nil {
			t.Errorf("removed entry %s keeps its object", e.key)
		}
	}
	p.tier.mu.Unlock()
	if held > 4+64+2 {
		t.Errorf("the order holds %d entries for 4 objects", held)
	}
	if keys, ok := keysOf(p, ""); !ok || !slices.Equal(keys, []string{"k000", "k001", "k002", "k003"}) {
		t.Errorf("Whole = %v, %t", keys, ok)
	}
}

// TestFillKeepsNewer checks that a bulk read that began before a batch
// does not replace the object the batch wrote with the older one it
// decoded.
func TestFillKeepsNewer(t *testing.T) {
	_, p := newTestPart(4, nopMetrics{})
	st := p.Stamp()
	p.Begin()
	p.Committed(slices.Values([]Write{{Key: "k000", Sum: 2, EnvLen: envLen, Obj: "new"}}))
	p.Fill("k000", 1, envLen, "old", st, 1)
	if obj, ok, _ := p.Fast("k000"); !ok || obj != "new" {
		t.Errorf("Fast(k000) = %v, %t after a late Fill; want the batch's object", obj, ok)
	}
}

// TestReadDuringBatch checks that a bulk read whose transaction began while
// a batch was being committed, and so may see the batch's writes before
// Committed tells the tier, fills nothing fast and adds no key to a whole
// part: the part never lists the batch's new objects beside the ones the
// batch deletes, stays whole with the state before the batch, then with
// the state after, and a quiet bulk read finds it so.
func TestReadDuringBatch(t *testing.T) {
	one := Cost("protobuf", "k000", envLen)
	p := New(10*one).Part("protobuf", nopMetrics{}, new(Epoch))
	before := []string{"k000", "k001", "k002", "k003"}
	after := []string{"k001", "k002", "k003", "k004"}
	st := p.Stamp()
	for _, k := range before {
		p.Fill(k, 1, envLen, k, st, 4)
	}
	if !p.Complete(st, 4) {
		t.Fatal("a quiet bulk read left the part not whole")
	}
	// The batch deletes k000, writes k001 again (sum 2) and adds k004;
	// a read's transaction begins once the batch has committed to the
	// file, before the tier is told, and sees its writes.
	readAfter := func(st Stamp) {
		for _, k := range after {
			sum := uint64(1)
			if k == "k001" {
				sum = 2
			}
			p.Fill(k, sum, envLen, k, st, 4)
		}
	}
	p.Begin()
	st = p.Stamp()
	readAfter(st)
	// The part stays whole, with the state before the batch: the read
	// neither changed an entry nor added the key the batch creates.
	if keys, ok := keysOf(p, ""); !ok || !slices.Equal(keys, before) {
		t.Fatalf("Whole = %v, %t while the batch commits, want %v", keys, ok, before)
	}
	p.Committed(slices.Values([]Write{
		{Key: "k000", Delete: true},
		{Key: "k001", Sum: 2, EnvLen: envLen, Obj: "k001"},
		{Key: "k004", Sum: 1, EnvLen: envLen, Obj: "k004"},
	}))
	// The read during the batch left the part whole: Committed keeps it.
	if keys, ok := keysOf(p, ""); !ok || !slices.Equal(keys, after) {
		t.Fatalf("Whole = %v, %t after the batch, want %v", keys, ok, after)
	}
	st = p.Stamp()
	readAfter(st)
	if !p.Complete(st, 4) {
		t.Fatal("a quiet bulk read after the batch left the part not whole")
	}
	if keys, ok := keysOf(p, ""); !ok || !slices.Equal(keys, after) {
		t.Fatalf("Whole = %v, %t after a quiet bulk read, want %v", keys, ok, after)
	}
}

// TestFits checks that Fits answers what Fill does: an object is kept
// while objects of its size, as many as the store holds, fit in the
// whole budget and the tier has room for it, and not past that; a nil
// part keeps nothing.
func TestFits(t *testing.T) {
	one := Cost("protobuf", "k000", envLen)
	for _, tc := range []struct {
		name    string
		objects int
		held    int // objects in the tier before
		want    bool
	}{
		{"one of one", 1, 0, true},
		{"the tenth of ten", 10, 9, true},
		{"one of eleven", 11, 0, false},
		{"one of ten, the tier full", 10, 10, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := New(10*one).Part("protobuf", nopMetrics{}, new(Epoch))
			for i := range tc.held {
				k := fmt.Sprintf("h%03d", i)
				p.Fill(k, 1, envLen, k, p.Stamp(), tc.objects)
			}
			if p.Len() != tc.held {
				t.Fatalf("%d objects held, want %d", p.Len(), tc.held)
			}
			if got := p.Fits(len("k000"), envLen, tc.objects); got != tc.want {
				t.Errorf("Fits = %t, want %t", got, tc.want)
			}
			p.Fill("k000", 1, envLen, "k000", p.Stamp(), tc.objects)
			if kept := p.Len() == tc.held+1; kept != tc.want {
				t.Errorf("Fill kept it: %t, want %t", kept, tc.want)
			}
		})
	}
	var nilPart *Part
	if nilPart.Fits(1, 1, 1) {
		t.Error("a nil part fits an object")
	}
}
