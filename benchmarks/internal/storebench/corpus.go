// Package storebench measures warmcache's stores side by side with
// client-go's cache.NewIndexer: Go heap per object, batched write
// throughput, GetByKey and ByIndex latency, and Replace time, on the same
// realistic pods (internal/podgen).
//
// Every object a store receives is decoded from protobuf bytes first, as an
// informer's objects are, so that no store holds podgen's originals (whose
// strings are shared between pods and would understate the heap of the
// stores that keep objects).
//
// The measurement functions take a Timer so that the same code serves the
// go test benchmarks (a *testing.B) and the storebench program (a
// Stopwatch): only store calls run with the timer on; generating and
// decoding pods does not.
package storebench

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/warmcache/warmcache/internal/podgen"
)

// ErrInvalidArgument is returned for a size, batch or sample count that
// is not positive, or an index outside the corpus.
var ErrInvalidArgument = errors.New("storebench: invalid argument")

// GenerationAnnotation is the annotation an updated pod carries, set to
// the update's generation, so that every update changes the object.
const GenerationAnnotation = "bench.warmcache.io/generation"

// Corpus holds n podgen pods encoded as Kubernetes protobuf, in one
// pointer-free buffer (the garbage collector never scans it), and their
// keys. Decode returns a new object per call. A Corpus is immutable and
// safe for concurrent use.
type Corpus struct {
	buf  []byte
	off  []int // pod i is buf[off[i]:off[i+1]]
	keys []string
	// byKey lists the pods in key order, as the apiserver lists them.
	byKey []int
}

// NewCorpus generates pods 0..n-1 and encodes them. The generated pods are
// garbage once it returns.
func NewCorpus(n int) (*Corpus, error) {
	if n <= 0 {
		return nil, fmt.Errorf("%w: corpus of %d pods", ErrInvalidArgument, n)
	}
	c := &Corpus{off: make([]int, 1, n+1), keys: make([]string, n)}
	for i := range n {
		p := podgen.Pod(i)
		size := p.Size()
		if c.buf == nil {
			// Pods differ little in size: reserve for n of the first
			// one, plus a margin; append grows the buffer if needed.
			c.buf = make([]byte, 0, size*n+size*n/16)
		}
		start := len(c.buf)
		c.buf = slices.Grow(c.buf, size)[:start+size]
		if _, err := p.MarshalToSizedBuffer(c.buf[start:]); err != nil {
			return nil, fmt.Errorf("storebench: encode pod %d: %w", i, err)
		}
		c.off = append(c.off, len(c.buf))
		c.keys[i] = p.Namespace + "/" + p.Name
	}
	c.buf = c.buf[:len(c.buf):len(c.buf)]
	c.byKey = make([]int, n)
	for i := range c.byKey {
		c.byKey[i] = i
	}
	slices.SortFunc(c.byKey, func(a, b int) int { return strings.Compare(c.keys[a], c.keys[b]) })
	return c, nil
}

// ListOrder returns pods 0..n-1 in key order, the order of a list from the
// apiserver (etcd returns keys sorted). Generation order, in which Load
// and Update write, spreads consecutive pods over the key space, as watch
// events are.
func (c *Corpus) ListOrder(n int) []int {
	out := make([]int, 0, n)
	for _, i := range c.byKey {
		if i < n {
			out = append(out, i)
		}
	}
	return out
}

// Len returns the number of pods.
func (c *Corpus) Len() int { return len(c.keys) }

// Bytes returns the total size of the encoded pods.
func (c *Corpus) Bytes() int { return len(c.buf) }

// Key returns the store key (namespace/name) of pod i.
func (c *Corpus) Key(i int) string { return c.keys[i] }

// Decode returns a new pod decoded from the protobuf bytes of pod i. Its
// resourceVersion is i+1.
func (c *Corpus) Decode(i int) (*corev1.Pod, error) {
	if i < 0 || i >= len(c.keys) {
		return nil, fmt.Errorf("%w: pod %d of %d", ErrInvalidArgument, i, len(c.keys))
	}
	p := &corev1.Pod{}
	if err := p.Unmarshal(c.buf[c.off[i]:c.off[i+1]]); err != nil {
		return nil, fmt.Errorf("storebench: decode pod %d: %w", i, err)
	}
	return p, nil
}

// Updated returns pod i decoded anew, as the update of generation gen
// (gen > 0) would bring it: GenerationAnnotation set to gen and the given
// resourceVersion.
func (c *Corpus) Updated(i, gen int, rv string) (*corev1.Pod, error) {
	p, err := c.Decode(i)
	if err != nil {
		return nil, err
	}
	p.ResourceVersion = rv
	if p.Annotations == nil {
		p.Annotations = map[string]string{}
	}
	p.Annotations[GenerationAnnotation] = strconv.Itoa(gen)
	return p, nil
}
