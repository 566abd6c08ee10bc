package informer

import (
	"context"
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

// Scope restricts what an informer lists and watches. It is part of the
// identity recorded in a bolt file: informers of different scopes never
// share data.
type Scope struct {
	// Namespace restricts to one namespace; "" is all.
	Namespace string
	// LabelSelector and FieldSelector restrict the list/watch, in the
	// syntax of labels.Parse and fields.ParseSelector.
	LabelSelector, FieldSelector string
	// Shard names a shard of a sharded list/watch; the factory only
	// records it (the ListerWatcher must apply it).
	Shard string
}

// canonical validates s and returns it with its label selector
// canonicalised.
func (s Scope) canonical() (Scope, error) {
	if v := strings.TrimSpace(s.LabelSelector); v != "" {
		sel, err := labels.Parse(v)
		if err != nil {
			return s, fmt.Errorf("%w: label selector %q: %w", ErrInvalidOptions, s.LabelSelector, err)
		}
		s.LabelSelector = sel.String()
	} else {
		s.LabelSelector = ""
	}
	s.FieldSelector = strings.TrimSpace(s.FieldSelector)
	if s.FieldSelector != "" {
		if _, err := fields.ParseSelector(s.FieldSelector); err != nil {
			return s, fmt.Errorf("%w: field selector %q: %w", ErrInvalidOptions, s.FieldSelector, err)
		}
	}
	return s, nil
}

// tweak applies the scope's selectors to list options.
func (s Scope) tweak(o *metav1.ListOptions) {
	if s.LabelSelector != "" {
		o.LabelSelector = s.LabelSelector
	}
	if s.FieldSelector != "" {
		o.FieldSelector = s.FieldSelector
	}
}

// name names an informer of gvr in scope s (logs, metrics, the factory's
// map).
func (s Scope) name(gvr schema.GroupVersionResource) string {
	var b strings.Builder
	b.WriteString(gvr.Resource)
	if gvr.Group != "" {
		b.WriteString("." + gvr.Group)
	}
	b.WriteString("/" + gvr.Version)
	for _, kv := range [][2]string{{"ns", s.Namespace}, {"labels", s.LabelSelector}, {"fields", s.FieldSelector}, {"shard", s.Shard}} {
		if kv[1] != "" {
			fmt.Fprintf(&b, " %s=%q", kv[0], kv[1])
		}
	}
	return b.String()
}

// TypedListWatch returns a ListerWatcher for the typed resource gvr in
// scope, through a REST client built from config for gvr's group version
// with client-go's kubernetes scheme (or s, if not nil).
func TypedListWatch(config *rest.Config, s *runtime.Scheme, gvr schema.GroupVersionResource, scope Scope) (cache.ListerWatcher, error) {
	if config == nil {
		return nil, fmt.Errorf("%w: no REST config for %s", ErrFactory, gvr)
	}
	c, err := restClientFor(config, s, gvr.GroupVersion())
	if err != nil {
		return nil, fmt.Errorf("%w: REST client for %s: %w", ErrFactory, gvr, err)
	}
	return cache.NewFilteredListWatchFromClient(c, gvr.Resource, scope.Namespace, scope.tweak), nil
}

// DynamicListWatch returns a ListerWatcher of unstructured objects of gvr
// in scope.
func DynamicListWatch(client dynamic.Interface, gvr schema.GroupVersionResource, scope Scope) cache.ListerWatcher {
	var ri dynamic.ResourceInterface = client.Resource(gvr)
	if scope.Namespace != "" {
		ri = client.Resource(gvr).Namespace(scope.Namespace)
	}
	return &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			scope.tweak(&o)
			return ri.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			scope.tweak(&o)
			return ri.Watch(ctx, o)
		},
	}
}
