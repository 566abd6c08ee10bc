package bolt

import (
	"sync"
	"time"
)

// testMetrics records what a DB tells its Metrics, for the tests to read.
type testMetrics struct {
	mu sync.Mutex
	// hot holds each resource's hot tier counts, by name: hits, misses,
	// evictions, bytes, entries.
	hot     map[string]map[string]int64
	corrupt map[[2]string]int64 // by resource and part
	files   map[string]*testFileMetrics
}

func newTestMetrics() *testMetrics {
	return &testMetrics{hot: map[string]map[string]int64{}, corrupt: map[[2]string]int64{}, files: map[string]*testFileMetrics{}}
}

// hotCount returns a hot tier count of resource (see testMetrics.hot).
func (m *testMetrics) hotCount(resource, name string) int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.hot[resource][name]
}

// corruptCount returns the corrupt records counted for resource and part,
// and the number of (resource, part) pairs counted.
func (m *testMetrics) corruptCount(resource, part string) (n int64, series int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.corrupt[[2]string{resource, part}], len(m.corrupt)
}

// file returns what was recorded of the file at path.
func (m *testMetrics) file(path string) testFileMetrics {
	m.mu.Lock()
	defer m.mu.Unlock()
	if f := m.files[path]; f != nil {
		return *f
	}
	return testFileMetrics{}
}

func (m *testMetrics) Hot(resource string) HotMetrics {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.hot[resource] == nil {
		m.hot[resource] = map[string]int64{}
	}
	return testHotMetrics{m: m, counts: m.hot[resource]}
}

func (m *testMetrics) CorruptRecord(resource, part string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.corrupt[[2]string{resource, part}]++
}

func (m *testMetrics) File(path string) FileMetrics {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.files[path] = &testFileMetrics{}
	return testFileRecorder{m: m, f: m.files[path]}
}

type testHotMetrics struct {
	m      *testMetrics
	counts map[string]int64
}

func (h testHotMetrics) add(name string, n int64) {
	h.m.mu.Lock()
	defer h.m.mu.Unlock()
	h.counts[name] += n
}

func (h testHotMetrics) Hit()     { h.add("hits", 1) }
func (h testHotMetrics) Miss()    { h.add("misses", 1) }
func (h testHotMetrics) Evicted() { h.add("evictions", 1) }

func (h testHotMetrics) Added(bytes int64) {
	h.add("bytes", bytes)
	h.add("entries", 1)
}

func (h testHotMetrics) Removed(bytes int64) {
	h.add("bytes", -bytes)
	h.add("entries", -1)
}

// testFileMetrics is what was recorded of a file.
type testFileMetrics struct {
	corrupt, checked bool
	duration         time.Duration
}

type testFileRecorder struct {
	m *testMetrics
	f *testFileMetrics
}

func (r testFileRecorder) Corrupt() {
	r.m.mu.Lock()
	defer r.m.mu.Unlock()
	r.f.corrupt = true
}

func (r testFileRecorder) Checked(d time.Duration, corrupt bool) {
	r.m.mu.Lock()
	defer r.m.mu.Unlock()
	r.f.corrupt = r.f.corrupt || corrupt
	r.f.checked, r.f.duration = true, d
}
