// Package genserver is a lean fake Kubernetes API server for benchmarks at
// a million objects: it serves list and watch of resources whose objects
// are generated from their index when they are served (internal/podgen for
// pods), so that it holds about 16 bytes per object — its resourceVersion
// and generation — instead of the objects. internal/fakeapi on
// internal/fakesource keeps every object on its heap (about 15 KB per pod)
// and its history; at a million pods that is more memory than the
// benchmark's machine can give it.
//
// It serves what informers ask for, as kube-apiserver 1.36 does:
//
//   - LIST (GET /api/v1/{resource}, /apis/{group}/{version}/{resource}) in
//     key order with limit and continue, of the current state;
//   - WATCH from a resourceVersion, with 410 Expired (an ERROR event) for a
//     compacted one, and WatchList (sendInitialEvents=true): every object
//     as ADDED, in key order, encoded on every core, then a bookmark
//     annotated "k8s.io/initial-events-end";
//   - protobuf or JSON for typed objects by the Accept header, JSON for
//     unstructured ones; the watch framing of kube-apiserver.
//
// Label and field selectors and namespaced paths are not served. Changes
// come from the control methods (Churn, Restart) or the control API under
// /bench/ (see Client); watch streams can be held back (Hold, Open) so
// that a benchmark releases a batch of changes at once.
//
// A Server is safe for concurrent use.
package genserver

import (
	"errors"
	"fmt"
	"sort"
	"sync"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/warmcache/warmcache/benchmarks/internal/measure"
)

// GenerationAnnotation is the annotation a changed object carries: the
// generation of its last change.
const GenerationAnnotation = "bench.warmcache.io/generation"

// Errors of this package.
var (
	// ErrInvalid is returned for invalid options or control arguments.
	ErrInvalid = errors.New("genserver: invalid argument")
	// ErrControl is returned by Client when the server answers a control
	// request with an error.
	ErrControl = errors.New("genserver: control request failed")
)

// change is one entry of the history: object idx of resource res took
// generation gen at rv.
type change struct {
	rv  int64
	res int32
	idx int32
	gen uint32
}

// resource is a served resource and the state of its objects.
type resource struct {
	Resource
	// ri is the resource's index in Server.res, its number in the
	// history.
	ri    int32
	typed bool
	// order lists the object indices in key order; fixed.
	order []int32
	// rv and gen are each object's resourceVersion and generation
	// (0: never changed), guarded by Server.mu.
	rv  []int64
	gen []uint32
}

// Server serves generated resources. See the package documentation.
type Server struct {
	byPath map[string]*resource // "group/version/resource"
	res    []*resource
	// held holds back the watch streams (Hold, Churn, Open).
	held Gate

	// mu guards every field below and each resource's rv and gen.
	mu sync.Mutex
	// rv is the last resourceVersion handed out; compacted the oldest one
	// a watch may start from.
	rv, compacted int64
	// log holds the changes after compacted, in rv order.
	log []change
	// notify is closed and replaced on every change.
	notify chan struct{}
	// restarted is closed and replaced by Restart: every watch ends.
	restarted chan struct{}
	stats     Stats
}

// Stats are the server's request counters.
type Stats struct {
	ResourceVersion int64 `json:"resourceVersion"`
	Lists           int   `json:"lists"`
	Watches         int   `json:"watches"`
	WatchLists      int   `json:"watchLists"`
	OpenWatches     int   `json:"openWatches"`
}

// New returns a server of resources. Object i of the k-th resource starts
// with resourceVersion 1 + (the objects of the resources before it) + i + 1.
func New(resources ...Resource) (*Server, error) {
	if len(resources) == 0 {
		return nil, fmt.Errorf("%w: no resources", ErrInvalid)
	}
	s := &Server{byPath: map[string]*resource{}, rv: 1, notify: make(chan struct{}), restarted: make(chan struct{})}
	for _, r := range resources {
		if err := r.validate(); err != nil {
			return nil, err
		}
		p := path(r.GVR)
		if s.byPath[p] != nil {
			return nil, fmt.Errorf("%w: resource %v listed twice", ErrInvalid, r.GVR)
		}
		_, unstructured := r.New(0).(interface{ UnstructuredContent() map[string]interface{} })
		res := &resource{Resource: r, ri: int32(len(s.res)), typed: !unstructured, order: keyOrder(r), rv: make([]int64, r.Count), gen: make([]uint32, r.Count)}
		for i := range res.rv {
			s.rv++
			res.rv[i] = s.rv
		}
		s.byPath[p] = res
		s.res = append(s.res, res)
	}
	s.compacted = s.rv
	return s, nil
}

func path(gvr schema.GroupVersionResource) string {
	return gvr.Group + "/" + gvr.Version + "/" + gvr.Resource
}

// keyOrder returns r's object indices sorted by namespace/name.
func keyOrder(r Resource) []int32 {
	type key struct {
		ns, name string
		i        int32
	}
	keys := make([]key, r.Count)
	for i := range keys {
		ns, name := r.Key(i)
		keys[i] = key{ns, name, int32(i)}
	}
	sort.Slice(keys, func(a, b int) bool {
		if keys[a].ns != keys[b].ns {
			return keys[a].ns < keys[b].ns
		}
		return keys[a].name < keys[b].name
	})
	order := make([]int32, len(keys))
	for i, k := range keys {
		order[i] = k.i
	}
	return order
}

// ChurnResult describes the changes Churn applied.
type ChurnResult struct {
	FirstRV int64 `json:"firstRV"`
	LastRV  int64 `json:"lastRV"`
}

// ChurnOrder is the order in which Churn changes the objects of a
// resource: the k-th change is object ((k mod Hot) * stride) mod Count,
// stride being measure.SpreadStride(Count). Stride is coprime with Count,
// so the first Hot changes go to Hot distinct objects spread over the
// whole key range (every namespace), and the following ones cycle over
// them in the same order. With Hot = Count (which a Hot of 0 stands for)
// this is (k*stride) mod Count: every object changes once before any
// changes twice.
type ChurnOrder struct {
	count, hot, stride int64
}

// NewChurnOrder returns the order of the changes to a resource of count
// objects restricted to a hot set of hot of them; 0 for all of them. A
// negative hot, or one above count, is invalid (not clamped: a hot set
// larger than the objects is a mistake of the caller's, not a request for
// the uniform churn).
func NewChurnOrder(count, hot int) (ChurnOrder, error) {
	if count <= 0 || hot < 0 || hot > count {
		return ChurnOrder{}, fmt.Errorf("%w: churn over a hot set of %d of %d objects", ErrInvalid, hot, count)
	}
	if hot == 0 {
		hot = count
	}
	return ChurnOrder{count: int64(count), hot: int64(hot), stride: int64(measure.SpreadStride(count))}, nil
}

// Index returns the index of the object the k-th change (k >= 0) changes.
func (o ChurnOrder) Index(k int) int {
	return int(((int64(k) % o.hot) * o.stride) % o.count)
}

// Churn holds back every watch stream (until Open) and changes n objects
// of the resource named resource ("pods", or "group/version/resource" in
// general; "" for the first resource) to generation gen, in the order of
// NewChurnOrder(Count, hot): with hot 0, spread over every object before
// any changes twice; with hot > 0, cycling over hot distinct objects
// spread over the key range. A hot set above the resource's Count is
// invalid.
func (s *Server) Churn(resource string, n int, gen uint32, hot int) (ChurnResult, error) {
	var res ChurnResult
	r, err := s.lookup(resource)
	if err != nil {
		return res, err
	}
	if n <= 0 || gen == 0 {
		return res, fmt.Errorf("%w: churn of %d changes to generation %d", ErrInvalid, n, gen)
	}
	order, err := NewChurnOrder(r.Count, hot)
	if err != nil {
		return res, err
	}
	ri := r.ri
	s.mu.Lock()
	defer s.mu.Unlock()
	s.held.Close()
	for k := range n {
		idx := int32(order.Index(k))
		s.rv++
		r.rv[idx], r.gen[idx] = s.rv, gen
		s.log = append(s.log, change{rv: s.rv, res: ri, idx: idx, gen: gen})
		if k == 0 {
			res.FirstRV = s.rv
		}
	}
	res.LastRV = s.rv
	s.broadcastLocked()
	return res, nil
}

func (s *Server) lookup(name string) (*resource, error) {
	if name == "" {
		return s.res[0], nil
	}
	for _, r := range s.res {
		if r.GVR.Resource == name || path(r.GVR) == name {
			return r, nil
		}
	}
	return nil, fmt.Errorf("%w: no resource %q", ErrInvalid, name)
}

// Hold holds back every watch stream until Open.
func (s *Server) Hold() { s.held.Close() }

// Open releases the watch streams Hold or Churn held back.
func (s *Server) Open() { s.held.Open() }

// Restart simulates an apiserver restart: every open watch ends and the
// history is compacted past the current resourceVersion (which advances by
// one, as a change to another kind would advance it), so that a watch
// resuming from any resourceVersion handed out before gets 410 Expired.
func (s *Server) Restart() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rv++
	s.compacted = s.rv
	s.log = nil
	close(s.restarted)
	s.restarted = make(chan struct{})
	s.broadcastLocked()
}

// Compact discards the history up to rv (the current resourceVersion if
// rv is 0): a watch from an older resourceVersion gets 410 Expired. A
// resourceVersion older than the last compaction or newer than the
// current one is invalid.
func (s *Server) Compact(rv int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if rv == 0 {
		rv = s.rv
	}
	if rv < s.compacted || rv > s.rv {
		return fmt.Errorf("%w: compaction to %d, outside %d..%d", ErrInvalid, rv, s.compacted, s.rv)
	}
	i := sort.Search(len(s.log), func(i int) bool { return s.log[i].rv > rv })
	s.log = append([]change(nil), s.log[i:]...)
	s.compacted = rv
	return nil
}

// Stats returns the request counters.
func (s *Server) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.stats
	st.ResourceVersion = s.rv
	return st
}

func (s *Server) broadcastLocked() {
	close(s.notify)
	s.notify = make(chan struct{})
}

// snapshot is the state of one resource at a resourceVersion.
type snapshot struct {
	rv    int64
	objRV []int64
	gen   []uint32
}

// snapshotLocked copies r's state.
func (s *Server) snapshotLocked(r *resource) snapshot {
	return snapshot{rv: s.rv, objRV: append([]int64(nil), r.rv...), gen: append([]uint32(nil), r.gen...)}
}

// changesLocked returns up to max changes of resource ri after rv, and
// the resourceVersion to continue from.
func (s *Server) changesLocked(ri int32, after int64, max int) ([]change, int64) {
	i := sort.Search(len(s.log), func(i int) bool { return s.log[i].rv > after })
	var out []change
	next := after
	for ; i < len(s.log) && len(out) < max; i++ {
		c := s.log[i]
		next = c.rv
		if c.res == ri {
			out = append(out, c)
		}
	}
	if i == len(s.log) && s.rv > next {
		next = s.rv
	}
	return out, next
}
