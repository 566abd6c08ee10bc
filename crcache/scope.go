package crcache

import (
	"fmt"
	"maps"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/warmcache/warmcache/factory"
)

// tag is what one of controller-runtime's informer maps applies: the
// scope its informers list and watch, and whether its readers copy.
type tag struct {
	scope       factory.Scope
	disableCopy bool
}

// probe is passed to an informer's transform by the hook to learn the tag
// of the informer map that created it (tagged).
type probe struct{ tag *tag }

// tagged wraps a config's transform so that it answers a probe with t:
// controller-runtime calls SetTransform on every informer it creates, right
// after the NewInformer hook, with its map's config's transform; that is
// how a hook shared by every namespace and ByObject entry learns which
// scope an informer has.
func tagged(t *tag, user toolscache.TransformFunc) toolscache.TransformFunc {
	return func(obj any) (any, error) {
		if p, ok := obj.(*probe); ok {
			p.tag = t
			return obj, nil
		}
		if user == nil {
			return obj, nil
		}
		return user(obj)
	}
}

// tagOf returns the tag of transform fn, nil if fn is not tagged.
func tagOf(fn toolscache.TransformFunc) *tag {
	if fn == nil {
		return nil
	}
	p := &probe{}
	if _, err := fn(p); err != nil {
		return nil
	}
	return p.tag
}

func scopeOf(ns string, c cache.Config) factory.Scope {
	s := factory.Scope{Namespace: ns}
	if c.LabelSelector != nil {
		s.LabelSelector = c.LabelSelector.String()
	}
	if c.FieldSelector != nil {
		s.FieldSelector = c.FieldSelector.String()
	}
	return s
}

func tagConfig(ns string, c cache.Config) cache.Config {
	t := &tag{scope: scopeOf(ns, c), disableCopy: ptr.Deref(c.UnsafeDisableDeepCopy, false)}
	c.Transform = tagged(t, c.Transform)
	return c
}

func defaulted(c, from cache.Config) cache.Config {
	if c.LabelSelector == nil {
		c.LabelSelector = from.LabelSelector
	}
	if c.FieldSelector == nil {
		c.FieldSelector = from.FieldSelector
	}
	if c.Transform == nil {
		c.Transform = from.Transform
	}
	if c.UnsafeDisableDeepCopy == nil {
		c.UnsafeDisableDeepCopy = from.UnsafeDisableDeepCopy
	}
	if c.EnableWatchBookmarks == nil {
		c.EnableWatchBookmarks = from.EnableWatchBookmarks
	}
	if c.SyncPeriod == nil {
		c.SyncPeriod = from.SyncPeriod
	}
	return c
}

func defaultsOf(o *cache.Options) cache.Config {
	return cache.Config{
		LabelSelector: o.DefaultLabelSelector, FieldSelector: o.DefaultFieldSelector,
		Transform: o.DefaultTransform, UnsafeDisableDeepCopy: o.DefaultUnsafeDisableDeepCopy,
		EnableWatchBookmarks: o.DefaultEnableWatchBookmarks, SyncPeriod: o.SyncPeriod,
	}
}

func byObjectConfig(b cache.ByObject) cache.Config {
	return cache.Config{
		LabelSelector: b.Label, FieldSelector: b.Field, Transform: b.Transform,
		UnsafeDisableDeepCopy: b.UnsafeDisableDeepCopy, EnableWatchBookmarks: b.EnableWatchBookmarks, SyncPeriod: b.SyncPeriod,
	}
}

// tagOptions validates o (Scheme and Mapper set) and returns it defaulted
// as controller-runtime's cache.New defaults it, with every config's
// transform tagged with the scope that config applies, and the
// namespaces each ByObject kind is cached in (nil: the default cache's).
func tagOptions(o cache.Options) (cache.Options, error) {
	if o.NewInformer != nil {
		return o, fmt.Errorf("%w: cache.Options.NewInformer is set; crcache sets it", ErrUnsupported)
	}
	if _, ok := o.DefaultNamespaces[metav1.NamespaceAll]; ok {
		return o, fmt.Errorf("%w: DefaultNamespaces with the all-namespaces key \"\" (its informers exclude the other namespaces by a field selector crcache does not record); list the namespaces, or none for all", ErrUnsupported)
	}
	for obj, b := range o.ByObject {
		if _, ok := b.Namespaces[metav1.NamespaceAll]; ok {
			return o, fmt.Errorf("%w: ByObject %T: Namespaces with the all-namespaces key \"\"", ErrUnsupported, obj)
		}
	}
	defaults := defaultsOf(&o)
	o.ByObject = maps.Clone(o.ByObject)
	o.DefaultNamespaces = maps.Clone(o.DefaultNamespaces)
	for obj, b := range o.ByObject {
		namespaced, err := apiutil.IsObjectNamespaced(obj, o.Scheme, o.Mapper)
		if err != nil {
			return o, fmt.Errorf("crcache: ByObject %T: is it namespaced: %w", obj, err)
		}
		if !namespaced && b.Namespaces != nil {
			return o, fmt.Errorf("crcache: ByObject %T is not namespaced, but its Namespaces is set", obj)
		}
		if namespaced && b.Namespaces == nil {
			b.Namespaces = maps.Clone(o.DefaultNamespaces)
		} else {
			b.Namespaces = maps.Clone(b.Namespaces)
		}
		for ns, c := range b.Namespaces {
			c = defaulted(c, byObjectConfig(b))
			if d, ok := o.DefaultNamespaces[ns]; ok {
				c = defaulted(c, d)
			}
			b.Namespaces[ns] = tagConfig(ns, defaulted(c, defaults))
		}
		if !namespaced || len(b.Namespaces) == 0 {
			c := tagConfig("", defaulted(byObjectConfig(b), defaults))
			b.Label, b.Field, b.Transform = c.LabelSelector, c.FieldSelector, c.Transform
			b.UnsafeDisableDeepCopy, b.EnableWatchBookmarks, b.SyncPeriod = c.UnsafeDisableDeepCopy, c.EnableWatchBookmarks, c.SyncPeriod
		}
		o.ByObject[obj] = b
	}
	for ns, c := range o.DefaultNamespaces {
		o.DefaultNamespaces[ns] = tagConfig(ns, defaulted(c, defaults))
	}
	// The default cache's cluster-wide map (every kind without
	// DefaultNamespaces, cluster-scoped kinds with them).
	o.DefaultTransform = tagConfig("", defaults).Transform
	return o, nil
}
