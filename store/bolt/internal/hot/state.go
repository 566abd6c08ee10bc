package hot

// EntryState is what a part holds for a key: for the tests of the store,
// which check what its reads and writes leave in the tier.
type EntryState struct {
	// Probation: the entry is in probation, not in the main segment.
	Probation bool
	// Fast: the entry may be returned without reading the file while the
	// DB's epoch is Epoch.
	Fast  bool
	Epoch uint64
}

// Entry returns the state of p's entry for key, if it holds one.
func (p *Part) Entry(key string) (EntryState, bool) {
	p.tier.mu.Lock()
	defer p.tier.mu.Unlock()
	e, ok := p.m[key]
	if !ok {
		return EntryState{}, false
	}
	return EntryState{Probation: e.prob, Fast: e.fast, Epoch: e.epoch}, true
}

// Len returns the number of entries p holds.
func (p *Part) Len() int {
	p.tier.mu.Lock()
	defer p.tier.mu.Unlock()
	return len(p.m)
}

// ProbationShare returns probation's current share of t's budget and the
// least it shrinks to.
func (t *Tier) ProbationShare() (share, least int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.probBudget, t.probMin()
}

// IsWhole reports whether p is known to hold every object of its store
// (it has an order of the current epoch).
func (p *Part) IsWhole() bool {
	epoch := p.epoch.Load()
	p.tier.mu.Lock()
	defer p.tier.mu.Unlock()
	return p.order != nil && p.order.epoch == epoch
}
