package crcache

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/warmcache/warmcache/store"
)

// probeName is a name no object can have (not a DNS subdomain): the Get
// List makes through controller-runtime to create, start and sync the
// informers of a kind (and get its errors) finds nothing, at the cost of
// one point read.
const probeName = "\x00crcache-probe"

// allNamespaces is controller-runtime's prefix of field index values for
// cluster-wide lookups (internal.KeyToNamespacedKey).
const allNamespaces = "__all_namespaces"

// errLimit stops a Select at the list's limit.
var errLimit = errors.New("limit reached")

// List lists the objects of out's kind as controller-runtime's informer
// cache does (same options, errors and results), reading only the
// selected objects from the stores: InNamespace, MatchingLabels,
// MatchingLabelsSelector and the first requirement of MatchingFields (an
// exact match on a field indexed with IndexField) are pushed down to
// store.Select, so only matching objects are decoded; the other field
// requirements filter those. Limit stops the read; Continue and non-exact
// field selectors are errors, as in controller-runtime. Items are deep
// copies with their kind set unless UnsafeDisableDeepCopy (the option or
// the config's) asks for the cache's shared objects, which must not be
// mutated. Items come in key order, namespace by namespace.
func (c *Cache) List(ctx context.Context, out client.ObjectList, opts ...client.ListOption) error {
	lo := client.ListOptions{}
	lo.ApplyOptions(opts)
	gvk, example, err := c.objectTypeForList(out)
	if err != nil {
		return err
	}
	if lo.Continue != "" {
		return fmt.Errorf("continue list option is not supported by the cache")
	}
	namespaced, err := apiutil.IsGVKNamespaced(gvk, c.opts.Mapper)
	if err != nil {
		return err
	}
	var reads []read
	if !namespaced {
		reads = []read{{probeNS: "", scopeNS: "", selNS: lo.Namespace}}
	} else if nss := c.namespacesOf(gvk); nss == nil {
		reads = []read{{probeNS: lo.Namespace, scopeNS: "", selNS: lo.Namespace}}
	} else if lo.Namespace != corev1.NamespaceAll {
		if _, ok := nss[lo.Namespace]; !ok {
			return fmt.Errorf("unable to list: %v because of unknown namespace for the cache", lo.Namespace)
		}
		reads = []read{{probeNS: lo.Namespace, scopeNS: lo.Namespace, selNS: lo.Namespace}}
	} else {
		for _, ns := range sortedKeys(nss) {
			reads = append(reads, read{probeNS: ns, scopeNS: ns, selNS: ""})
		}
	}
	for _, r := range reads {
		// Creates, starts and syncs the informer as controller-runtime's
		// List does, with its errors (ErrCacheNotStarted,
		// ErrResourceNotCached, a sync timeout).
		err := c.Cache.Get(ctx, client.ObjectKey{Namespace: r.probeNS, Name: probeName}, example.DeepCopyObject().(client.Object))
		if err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	var items []runtime.Object
	for _, r := range reads {
		for _, e := range c.registry.lookup(kindKey{gvk: gvk, class: classOf(example)}, r.scopeNS) {
			if err := c.read(ctx, e, gvk, r.selNS, lo, &items); err != nil {
				return err
			}
		}
	}
	if err := apimeta.SetList(out, items); err != nil {
		return err
	}
	out.SetContinue("continue-not-supported")
	return nil
}

// read is one informer map a List reads: probeNS is the namespace of its
// probe Get, scopeNS the namespace of the informers' scope, selNS the
// namespace the selection keeps.
type read struct{ probeNS, scopeNS, selNS string }

func (c *Cache) read(ctx context.Context, e entry, gvk schema.GroupVersionKind, ns string, lo client.ListOptions, items *[]runtime.Object) error {
	indexer := e.inf.GetIndexer()
	sel := store.Selection{Namespace: ns, Labels: lo.LabelSelector}
	var rest fields.Requirements
	if lo.FieldSelector != nil {
		reqs := lo.FieldSelector.Requirements()
		for _, r := range reqs {
			if r.Operator != selection.Equals && r.Operator != selection.DoubleEquals {
				return fmt.Errorf("non-exact field matches are not supported by the cache")
			}
		}
		if len(reqs) > 0 {
			sel.Index, sel.Value = fieldIndexName(reqs[0].Field), namespacedKey(ns, reqs[0].Value)
			if _, ok := indexer.GetIndexers()[sel.Index]; !ok {
				return fmt.Errorf("Index with name %s does not exist", sel.Index)
			}
			rest = reqs[1:]
		}
	}
	indexers := indexer.GetIndexers()
	for _, r := range rest {
		if _, ok := indexers[fieldIndexName(r.Field)]; !ok {
			return fmt.Errorf("index with name %s does not exist", fieldIndexName(r.Field))
		}
	}
	noCopy := e.tag.disableCopy || (lo.UnsafeDisableDeepCopy != nil && *lo.UnsafeDisableDeepCopy)
	err := store.Select(ctx, indexer, sel, func(_ string, obj any) error {
		if lo.Limit > 0 && int64(len(*items)) >= lo.Limit {
			return errLimit
		}
		for _, r := range rest {
			vals, err := indexers[fieldIndexName(r.Field)](obj)
			if err != nil {
				return err
			}
			if !slices.Contains(vals, namespacedKey(ns, r.Value)) {
				return nil
			}
		}
		o, ok := obj.(runtime.Object)
		if !ok {
			return fmt.Errorf("cache contained %T, which is not an Object", obj)
		}
		if !noCopy {
			o = o.DeepCopyObject()
			o.GetObjectKind().SetGroupVersionKind(gvk)
		}
		*items = append(*items, o)
		return nil
	})
	if err != nil && !errors.Is(err, errLimit) {
		return err
	}
	return nil
}

// objectTypeForList returns the kind of out's items and an empty object of
// that kind, as controller-runtime's informer cache does.
func (c *Cache) objectTypeForList(out client.ObjectList) (schema.GroupVersionKind, runtime.Object, error) {
	gvk, err := apiutil.GVKForObject(out, c.opts.Scheme)
	if err != nil {
		return gvk, nil, err
	}
	gvk.Kind = strings.TrimSuffix(gvk.Kind, "List")
	switch out.(type) {
	case runtime.Unstructured:
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(gvk)
		return gvk, u, nil
	case *metav1.PartialObjectMetadataList:
		m := &metav1.PartialObjectMetadata{}
		m.SetGroupVersionKind(gvk)
		return gvk, m, nil
	}
	obj, err := c.opts.Scheme.New(gvk)
	return gvk, obj, err
}

// namespacesOf returns the namespaces whose informer maps cache gvk's
// objects, nil for one cluster-wide map.
func (c *Cache) namespacesOf(gvk schema.GroupVersionKind) map[string]struct{} {
	nss := c.opts.DefaultNamespaces
	for obj, b := range c.opts.ByObject {
		if g, err := apiutil.GVKForObject(obj, c.opts.Scheme); err == nil && g == gvk {
			nss = b.Namespaces
			break
		}
	}
	if len(nss) == 0 {
		return nil
	}
	out := make(map[string]struct{}, len(nss))
	for ns := range nss {
		out[ns] = struct{}{}
	}
	return out
}

func sortedKeys(m map[string]struct{}) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// fieldIndexName is controller-runtime's name of the index IndexField
// adds for field.
func fieldIndexName(field string) string { return "field:" + field }

// namespacedKey is controller-runtime's field index value of v in ns.
func namespacedKey(ns, v string) string {
	if ns != "" {
		return ns + "/" + v
	}
	return allNamespaces + "/" + v
}
