package crcache

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/warmcache/warmcache/factory"
	"github.com/warmcache/warmcache/informer"
)

// class is the object type an informer holds, as controller-runtime keys
// its informer maps: typed, unstructured or metadata-only.
type class int

const (
	structured class = iota
	unstructuredClass
	metadataClass
)

func classOf(obj runtime.Object) class {
	switch obj.(type) {
	case runtime.Unstructured:
		return unstructuredClass
	case *metav1.PartialObjectMetadata, *metav1.PartialObjectMetadataList:
		return metadataClass
	}
	return structured
}

type kindKey struct {
	gvk   schema.GroupVersionKind
	class class
}

// entry is one persistent informer the hook created.
type entry struct {
	tag *tag
	inf *informer.Informer
}

// registry records the informers the hook created, by kind, for List's
// pushdown.
type registry struct {
	// mu guards byKind.
	mu     sync.Mutex
	byKind map[kindKey][]entry
}

func (r *registry) add(k kindKey, e entry) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.byKind == nil {
		r.byKind = map[kindKey][]entry{}
	}
	r.byKind[k] = append(r.byKind[k], e)
}

// lookup returns the informers of kind k whose scope's namespace is ns.
func (r *registry) lookup(k kindKey, ns string) []entry {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []entry
	for _, e := range r.byKind[k] {
		if e.tag.scope.Namespace == ns {
			out = append(out, e)
		}
	}
	return out
}

// runs counts the informers controller-runtime runs, so the file is
// closed only after the last has stopped.
type runs struct {
	// mu guards n and closing.
	mu      sync.Mutex
	n       int
	closing bool
	idle    *sync.Cond
}

func newRuns() *runs {
	r := &runs{}
	r.idle = sync.NewCond(&r.mu)
	return r
}

// enter reports whether an informer may run; a true return must be
// followed by exit.
func (r *runs) enter() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closing {
		return false
	}
	r.n++
	return true
}

func (r *runs) exit() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.n--
	if r.n == 0 {
		r.idle.Broadcast()
	}
}

// close refuses new runs and waits for the running ones to end.
func (r *runs) close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closing = true
	for r.n > 0 {
		r.idle.Wait()
	}
}

// hook is the NewInformer function crcache gives controller-runtime.
type hook struct {
	ctx      context.Context // for the factory's store opening only
	f        *factory.Factory
	scheme   *runtime.Scheme
	registry *registry
	runs     *runs
	// transformVersion is Options.TransformVersion.
	transformVersion string
}

func (h *hook) newInformer(lw toolscache.ListerWatcher, example runtime.Object, resync time.Duration, indexers toolscache.Indexers) toolscache.SharedIndexInformer {
	return &pending{h: h, lw: lw, example: example, resync: resync, indexers: indexers}
}

// pending is the informer the hook returns: controller-runtime calls
// SetTransform on it at once, with the tagged transform of the informer
// map that created it; that opens the persistent informer of the tagged
// scope, which every other method then serves. An informer whose scope
// cannot be learnt or whose store cannot be opened makes SetTransform fail,
// and so controller-runtime's GetInformer, Get or List: never a silent
// in-memory fallback.
type pending struct {
	h        *hook
	lw       toolscache.ListerWatcher
	example  runtime.Object
	resync   time.Duration
	indexers toolscache.Indexers

	// errHandler is set before the informer exists.
	errHandler toolscache.WatchErrorHandlerWithContext
	// inf is set once by the first SetTransform, before
	// controller-runtime publishes the informer.
	inf atomic.Pointer[informer.Informer]
	// The informer's other methods: nil until SetTransform.
	toolscache.SharedIndexInformer
}

func (p *pending) SetWatchErrorHandler(h toolscache.WatchErrorHandler) error {
	return p.SetWatchErrorHandlerWithContext(func(_ context.Context, r *toolscache.Reflector, err error) { h(r, err) })
}

func (p *pending) SetWatchErrorHandlerWithContext(h toolscache.WatchErrorHandlerWithContext) error {
	if inf := p.inf.Load(); inf != nil {
		return inf.SetWatchErrorHandlerWithContext(h)
	}
	p.errHandler = h
	return nil
}

func (p *pending) SetTransform(fn toolscache.TransformFunc) error {
	if inf := p.inf.Load(); inf != nil {
		return inf.SetTransform(fn)
	}
	t := tagOf(fn)
	if t == nil {
		return fmt.Errorf("%w: an informer of %T from outside crcache's cache options: its scope is unknown", ErrUnsupported, p.example)
	}
	gvk, err := apiutil.GVKForObject(p.example, p.h.scheme)
	if err != nil {
		return fmt.Errorf("crcache: informer of %T: %w", p.example, err)
	}
	// The transform is the factory's to set: it checks the stored objects
	// against it when it opens the informer's store.
	inf, err := p.h.f.HookInformer(p.h.ctx, p.lw, p.example, p.resync, p.indexers, t.scope,
		factory.WithTransformVersion(p.h.transformVersion), factory.WithTransform(fn))
	if err != nil {
		return fmt.Errorf("crcache: persistent informer of %s in scope %+v: %w", gvk, t.scope, err)
	}
	if p.errHandler != nil {
		if err := inf.SetWatchErrorHandlerWithContext(p.errHandler); err != nil {
			return err
		}
	}
	p.SharedIndexInformer = inf
	p.inf.Store(inf)
	p.h.registry.add(kindKey{gvk: gvk, class: classOf(p.example)}, entry{tag: t, inf: inf})
	return nil
}

// RunWithContext runs the informer until ctx is done, unless the cache is
// closing its file.
func (p *pending) RunWithContext(ctx context.Context) {
	if !p.h.runs.enter() {
		return
	}
	defer p.h.runs.exit()
	p.SharedIndexInformer.RunWithContext(ctx)
}

// Run is RunWithContext with a stop channel.
func (p *pending) Run(stop <-chan struct{}) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	p.RunWithContext(ctx)
}
