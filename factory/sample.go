package factory

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/warmcache/warmcache/store"
	"github.com/warmcache/warmcache/store/bolt"
)

// A transform or an index function given at creation that changes meaning
// without a new WithTransformVersion or WithIndexVersion would otherwise
// go unseen: the file stores transformed objects and index entries, not
// the functions. So each resource of the file keeps one sample object as
// it arrived from the server, before the transform, with fingerprints of
// what the transform and each index function made of it when the stored
// objects were written. When its informer is created again, the factory
// applies the informer's transform and index functions to the sample: an
// output that differs means the stored objects (or entries) were shaped by
// other functions, and the resource is discarded and relisted, with a log
// line saying why.
//
// The sample is stored in a resource of its own in the same file (the
// identity of the informer's resource, its resource and kind followed by
// SampleResourceSuffix and SampleKindSuffix, so that a tool that looks a
// resource up by name never takes one for the other), with the resource's
// codec, sealed where the resource is sealed, and recorded with the same
// cluster and transform version, so that whatever discards the resource
// discards its sample. It is the first
// object the informer's transform sees; without a transform, the first
// stored object (the stored objects are then the server's), taken when the
// informer is created or when the factory shuts down. A change that does
// not show on the sample is not seen, and a transform whose output differs
// for the same input (a timestamp, a random value) cannot be checked (a
// log line says so): WithTransformVersion and WithIndexVersion remain the
// way to say that a function changed.

// SampleResourceSuffix and SampleKindSuffix end the resource and the kind
// recorded in the identity of the resource that holds an informer's sample
// object; the identity is the informer's own otherwise ("pods-sample" and
// "Pod sample" for pods). See IsSample.
const (
	SampleResourceSuffix = "-sample"
	SampleKindSuffix     = " sample"
)

// IsSample reports whether id is the identity of a resource that holds an
// informer's sample object, not objects of the cluster: tools that list a
// file's resources may leave it out.
func IsSample(id bolt.Identity) bool {
	return strings.HasSuffix(id.Kind, SampleKindSuffix) && strings.HasSuffix(id.Resource, SampleResourceSuffix)
}

// sampleAnnotation is the annotation of the stored sample that holds its
// fingerprints (JSON of fingerprints); it is removed before the sample is
// given to a transform.
const sampleAnnotation = "warmcache.io/sample-fingerprints"

// fingerprints are the SHA-256 of what a transform made of the sample (its
// JSON) and of the values each index function gave for the transformed
// sample. An empty Transform means it could not be computed: the
// transform failed on the sample or gave different outputs for the same
// input.
type fingerprints struct {
	Transform string            `json:"transform"`
	Indexes   map[string]string `json:"indexes,omitempty"`
	// IndexVersion is the WithIndexVersion the index functions had: a
	// new version says they changed, and their entries are rebuilt.
	IndexVersion string `json:"indexVersion,omitempty"`
}

// errUnstable is why a transform cannot be checked: two calls on copies of
// the same object gave different outputs.
var errUnstable = errors.New("the transform gives different outputs for the same object")

// fingerprint applies transform (nil: none) to two copies of sample and
// indexers, of version indexVersion, to the output.
func fingerprint(transform cache.TransformFunc, indexers cache.Indexers, indexVersion string, sample runtime.Object) (fingerprints, error) {
	var outs [2][]byte
	var out interface{}
	for i := range outs {
		o, err := applyTransform(transform, sample.DeepCopyObject())
		if err != nil {
			return fingerprints{}, err
		}
		b, err := json.Marshal(o)
		if err != nil {
			return fingerprints{}, fmt.Errorf("the transform's output: %w", err)
		}
		outs[i], out = b, o
	}
	if !bytes.Equal(outs[0], outs[1]) {
		return fingerprints{}, errUnstable
	}
	fp := fingerprints{Transform: digest(outs[0]), Indexes: map[string]string{}, IndexVersion: indexVersion}
	for name, fn := range indexers {
		values, err := applyIndex(fn, out)
		if err != nil {
			continue // an index function that fails on the sample is not checked
		}
		slices.Sort(values)
		fp.Indexes[name] = digest([]byte(strings.Join(values, "\x00")))
	}
	return fp, nil
}

func digest(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:16])
}

// applyTransform calls transform on obj, a panic returned as an error.
func applyTransform(transform cache.TransformFunc, obj interface{}) (out interface{}, err error) {
	if transform == nil {
		return obj, nil
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("the transform panicked on the sample: %v", r)
		}
	}()
	return transform(obj)
}

// applyIndex calls fn on obj, a panic returned as an error.
func applyIndex(fn cache.IndexFunc, obj interface{}) (values []string, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("the index function panicked on the sample: %v", r)
		}
	}()
	return fn(obj)
}

// differs returns why the stored objects were shaped by other functions
// than now's, or "".
func (old fingerprints) differs(now fingerprints) string {
	if old.Transform != "" && now.Transform != "" && old.Transform != now.Transform {
		return "the transform's output on the stored sample object changed since the stored objects were written, and WithTransformVersion did not"
	}
	if old.IndexVersion != now.IndexVersion {
		return "" // the index entries are rebuilt (WithIndexVersion)
	}
	names := make([]string, 0, len(old.Indexes))
	for name := range old.Indexes {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if h, ok := now.Indexes[name]; ok && h != old.Indexes[name] {
			return fmt.Sprintf("index function %q's output on the stored sample object changed since the index entries were written, and WithIndexVersion did not", name)
		}
	}
	return ""
}

// sampler keeps the sample of one informer's resource.
type sampler struct {
	st        *bolt.Store         // the sample's resource
	transform cache.TransformFunc // the informer's at creation; nil: none
	indexers  cache.Indexers      // the informer's at creation
	// indexVersion is the informer's WithIndexVersion.
	indexVersion string
	logger       klog.Logger
	resource     string // the informer's resource, for log lines
	readOnly     bool   // the file is read-only: nothing is recorded
	// need is set while no usable sample is stored: the next object the
	// transform sees, or (without a transform) the first stored one, is
	// recorded.
	need atomic.Bool
	// mu serializes recording.
	mu sync.Mutex
}

// sampleIdentity is the identity of the resource holding id's sample.
func sampleIdentity(id bolt.Identity) bolt.Identity {
	id.Resource += SampleResourceSuffix
	id.Kind += SampleKindSuffix
	return id
}

// openSampler opens the resource holding the sample of resource id (whose
// options are ro), and checks the stored objects against it: when the
// informer's transform or an index function given at creation makes
// something else of the sample than what was recorded, the resource's
// stored objects are deleted (before it is opened), with a log line, so
// that the informer relists; an error if they cannot be. A sample resource
// that cannot be opened (a read-only file without one) only loses the
// check: the sampler is nil.
func (f *Factory) openSampler(ctx context.Context, ro bolt.ResourceOptions, example runtime.Object, transform cache.TransformFunc) (*sampler, error) {
	so := bolt.ResourceOptions{
		Identity: sampleIdentity(ro.Identity), Codec: ro.Codec,
		Cluster: ro.Cluster, TransformVersion: ro.TransformVersion,
		HotBytes: new(int64), // every read decodes: the sample is read once
	}
	if _, ok := example.(*unstructured.Unstructured); !ok {
		so.Prototype = example
	}
	st, err := f.db.Resource(ctx, so)
	if err != nil {
		if !errors.Is(err, bolt.ErrResourceNotFound) {
			f.logger.Error(err, "Cannot open the sample object that detects a changed transform or index function; the stored objects are not checked", "resource", ro.Identity.String())
		}
		return nil, nil
	}
	s := &sampler{
		st: st, transform: transform, indexers: ro.Indexers, indexVersion: ro.IndexVersion,
		logger: f.logger, resource: ro.Identity.String(), readOnly: f.opts.Bolt.ReadOnly,
	}
	sample, old, ok := s.read()
	if !ok {
		s.need.Store(!s.readOnly)
		return s, nil
	}
	now, err := fingerprint(transform, ro.Indexers, ro.IndexVersion, sample)
	if err != nil {
		s.unchecked(err)
		return s, nil
	}
	reason := old.differs(now)
	if reason == "" {
		if old.Transform == "" || old.IndexVersion != now.IndexVersion || !maps.Equal(old.Indexes, now.Indexes) {
			s.write(sample, now) // what could not be checked can be from now on
		}
		return s, nil
	}
	key, _ := store.KeyOf(store.DefaultKeyFunc, sample)
	f.logger.Info("Discarding the stored objects of this resource and relisting: "+reason,
		"resource", ro.Identity.String(), "sample", key)
	if _, err := f.db.DropResource(ctx, ro.Identity, bolt.DropOptions{}); err != nil {
		_ = st.Close()
		return nil, fmt.Errorf("%w: %s: %s, and its stored objects cannot be deleted: %w", ErrResource, ro.Identity, reason, err)
	}
	s.write(sample, now)
	return s, nil
}

// read returns the stored sample, without its fingerprints annotation, and
// its fingerprints; false when there is none or it cannot be read.
func (s *sampler) read() (runtime.Object, fingerprints, bool) {
	objs := s.st.List()
	if len(objs) != 1 {
		return nil, fingerprints{}, false
	}
	obj, ok := objs[0].(runtime.Object)
	if !ok {
		return nil, fingerprints{}, false
	}
	obj = obj.DeepCopyObject() // stored objects are shared: never mutated
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, fingerprints{}, false
	}
	ann := m.GetAnnotations()
	var fp fingerprints
	if err := json.Unmarshal([]byte(ann[sampleAnnotation]), &fp); err != nil {
		return nil, fingerprints{}, false
	}
	delete(ann, sampleAnnotation)
	if len(ann) == 0 {
		ann = nil
	}
	m.SetAnnotations(ann)
	return obj, fp, true
}

// write stores sample with fp as its only object and reports whether it
// did. An error is logged: the check is lost, not the informer.
func (s *sampler) write(sample runtime.Object, fp fingerprints) bool {
	if s.readOnly {
		return false
	}
	obj := sample.DeepCopyObject()
	m, err := meta.Accessor(obj)
	if err != nil {
		return false
	}
	b, err := json.Marshal(fp)
	if err != nil {
		return false
	}
	ann := make(map[string]string, len(m.GetAnnotations())+1)
	for k, v := range m.GetAnnotations() {
		ann[k] = v
	}
	ann[sampleAnnotation] = string(b)
	m.SetAnnotations(ann)
	if err := s.st.Replace([]interface{}{obj}, ""); err != nil {
		s.logger.Error(err, "Cannot store the sample object that detects a changed transform or index function", "resource", s.resource)
		return false
	}
	return true
}

// record makes obj, an object as the server sent it, the sample, once per
// run: it is stored with its fingerprints, then read back, and if the
// object the next start will decode gives other fingerprints (a field the
// codec does not keep as it was), stored with those. A crash in between
// leaves the first ones, which can only cause a needless relist.
func (s *sampler) record(obj runtime.Object) {
	if !s.need.CompareAndSwap(true, false) {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := meta.Accessor(obj); err != nil {
		return
	}
	fp, err := fingerprint(s.transform, s.indexers, s.indexVersion, obj)
	if err != nil {
		s.unchecked(err)
		s.write(obj, fingerprints{})
		return
	}
	if !s.write(obj, fp) {
		return
	}
	sample, _, ok := s.read()
	if !ok {
		return
	}
	if again, err := fingerprint(s.transform, s.indexers, s.indexVersion, sample); err == nil && !reflect.DeepEqual(again, fp) {
		s.write(sample, again)
	}
}

// unchecked logs why the functions cannot be checked on the sample.
func (s *sampler) unchecked(err error) {
	s.logger.Info("Cannot check the transform against the stored objects; change WithTransformVersion when it changes", "resource", s.resource, "reason", err.Error())
}

// wrap returns transform recording, while no sample is stored, the first
// object it is given.
func (s *sampler) wrap(transform cache.TransformFunc) cache.TransformFunc {
	return func(obj interface{}) (interface{}, error) {
		if s.need.Load() {
			if o, ok := obj.(runtime.Object); ok {
				s.record(o.DeepCopyObject())
			}
		}
		return transform(obj)
	}
}

// takeFrom records, while no sample is stored and the informer has no
// transform, the first object of st (the server's objects).
func (s *sampler) takeFrom(ctx context.Context, st store.Store) {
	if s.transform != nil || !s.need.Load() {
		return
	}
	var first runtime.Object
	errFirst := errors.New("first object")
	err := st.Scan(ctx, func(_ string, obj interface{}) error {
		first, _ = obj.(runtime.Object)
		return errFirst
	})
	if first == nil || (err != nil && !errors.Is(err, errFirst)) {
		return
	}
	s.record(first.DeepCopyObject())
}

// Close closes the sample's resource.
func (s *sampler) Close() error { return s.st.Close() }
