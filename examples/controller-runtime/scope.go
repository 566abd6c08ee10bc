package main

import (
	"errors"
	"fmt"

	"github.com/warmcache/warmcache/factory"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// errScope reports cache options whose scopes warmcache cannot record.
var errScope = errors.New("controller-runtime example: cache options")

// scopeOf returns, for factory.Factory.NewInformerFunc, the scope
// controller-runtime's cache applies to each kind, derived from the same
// cache.Options (DefaultNamespaces, DefaultLabelSelector,
// DefaultFieldSelector and ByObject's Label and Field): the identity the
// file records must describe exactly what the informer lists, or a
// restart with other options would reuse another scope's objects.
//
// It refuses options it cannot describe: more than one namespace (the
// cache then builds one informer per namespace for the same kind, and the
// NewInformer hook cannot tell them apart) and per-object namespaces.
func scopeOf(opts cache.Options, s *runtime.Scheme) (func(runtime.Object) factory.Scope, error) {
	var namespace string
	switch len(opts.DefaultNamespaces) {
	case 0:
	case 1:
		for ns, cfg := range opts.DefaultNamespaces {
			if cfg.LabelSelector != nil || cfg.FieldSelector != nil {
				return nil, fmt.Errorf("%w: per-namespace selectors are not supported", errScope)
			}
			namespace = ns
		}
	default:
		return nil, fmt.Errorf("%w: %d namespaces: each gets its own informer of the same kind, which the NewInformer hook cannot tell apart; use one namespace or all", errScope, len(opts.DefaultNamespaces))
	}
	base := factory.Scope{Namespace: namespace}
	if opts.DefaultLabelSelector != nil {
		base.LabelSelector = opts.DefaultLabelSelector.String()
	}
	if opts.DefaultFieldSelector != nil {
		base.FieldSelector = opts.DefaultFieldSelector.String()
	}
	byKind := map[string]factory.Scope{}
	for obj, bo := range opts.ByObject {
		if len(bo.Namespaces) > 0 {
			return nil, fmt.Errorf("%w: ByObject namespaces are not supported", errScope)
		}
		gvk, err := apiutil.GVKForObject(obj, s)
		if err != nil {
			return nil, fmt.Errorf("%w: ByObject %T: %w", errScope, obj, err)
		}
		sc := base
		if bo.Label != nil {
			sc.LabelSelector = bo.Label.String()
		}
		if bo.Field != nil {
			sc.FieldSelector = bo.Field.String()
		}
		byKind[gvk.String()] = sc
	}
	return func(example runtime.Object) factory.Scope {
		if gvk, err := apiutil.GVKForObject(example, s); err == nil {
			if sc, ok := byKind[gvk.String()]; ok {
				return sc
			}
		}
		return base
	}, nil
}
