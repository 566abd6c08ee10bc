package filecheck

// checkFreelist reads the persisted freelist page fl, marks it (and its
// overflow pages) reached and returns the set of pages it names. bbolt
// loads this page on every read-write open (freelist.Read) and trusts its
// count, so a count running past the page would make bbolt read past the
// file; every id must also be a page bbolt may hand out again.
func (w *walker) checkFreelist(fl uint64) (bitset, error) {
	path := w.pr.path
	if fl < 2 {
		return nil, corruptf(path, int64(fl), "freelist is a meta page")
	}
	if fl >= w.pr.hwm {
		return nil, corruptf(path, int64(fl), "freelist page beyond high water mark %d", w.pr.hwm)
	}
	p, err := w.pr.read(fl, w.buf(0))
	if err != nil {
		return nil, err
	}
	if p.flags != freelistPageFlag {
		return nil, corruptf(path, int64(fl), "%s page where the freelist belongs", pageTypeName(p.flags))
	}
	if err := w.claim(p); err != nil {
		return nil, err
	}

	// A count of 0xFFFF means the real count is the first id slot.
	idx, count := uint64(0), uint64(p.count)
	if p.count == 0xFFFF {
		if len(p.data) < pageHeaderSize+pgidSize {
			return nil, corruptf(path, int64(fl), "freelist too short for its count")
		}
		idx, count = 1, ne.Uint64(p.data[pageHeaderSize:])
	}
	room := uint64(len(p.data)-pageHeaderSize) / pgidSize
	if count > room || idx+count > room {
		return nil, corruptf(path, int64(fl), "freelist of %d ids does not fit its %d page(s)", count, uint64(p.overflow)+1)
	}

	freed := newBitset(w.pr.hwm)
	ids := p.data[pageHeaderSize+idx*pgidSize:]
	for i := uint64(0); i < count; i++ {
		id := ne.Uint64(ids[i*pgidSize:])
		switch {
		case id < 2:
			return nil, corruptf(path, int64(fl), "freelist names meta page %d", id)
		case id >= w.pr.hwm:
			return nil, corruptf(path, int64(fl), "freelist names page %d beyond high water mark %d", id, w.pr.hwm)
		case freed.has(id):
			return nil, corruptf(path, int64(fl), "freelist names page %d twice", id)
		case w.reach.has(id):
			return nil, corruptf(path, int64(fl), "freelist names page %d, which is in use by the freelist itself", id)
		}
		freed.set(id)
	}
	return freed, nil
}
