package store

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"
)

// Selection names the objects a read wants: those matching every part
// that is set.
type Selection struct {
	// Namespace restricts to one namespace; "" is every namespace.
	Namespace string
	// Labels restricts to objects whose labels it matches: any label
	// selector (equality, set-based, exists, !key). Nil or empty matches
	// every object.
	Labels labels.Selector
	// Index and Value, when Index is set, restrict to the objects filed
	// under Value in the store's index Index (cache.Indexer.ByIndex). An
	// unknown index is an error wrapping ErrIndexNotFound.
	Index, Value string
}

// matchesAll reports whether the label part selects everything.
func (s Selection) matchesAll() bool { return s.Labels == nil || s.Labels.Empty() }

// Matches reports whether obj, filed under key, is selected by the
// namespace and label parts of s (the index part is the caller's). An
// object without metadata matches only a selection without a namespace
// and labels.
func (s Selection) Matches(obj interface{}) (bool, error) {
	if s.Namespace == "" && s.matchesAll() {
		return true, nil
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return false, fmt.Errorf("select: %w", err)
	}
	if s.Namespace != "" && m.GetNamespace() != s.Namespace {
		return false, nil
	}
	return s.matchesAll() || s.Labels.Matches(labels.Set(m.GetLabels())), nil
}

// SelectStore is implemented by stores that answer a Selection by reading
// (and, for a persistent store, decoding) only the objects it selects:
// selector pushdown. Select calls fn for each selected object in key
// order, stops at fn's first error and returns it. fn must not write to
// the store. Objects passed to fn are shared (package doc).
type SelectStore interface {
	Select(ctx context.Context, sel Selection, fn ScanFunc) error
}

// Select calls fn for every object of indexer that sel selects. A store
// that implements SelectStore answers it itself; any other cache.Indexer
// is read as client-go's listers read it (cache.ListAllByNamespace): the
// index, else the namespace index, else every object, filtered. fn
// receives the object's key only from a SelectStore; otherwise "".
func Select(ctx context.Context, indexer cache.Indexer, sel Selection, fn ScanFunc) error {
	if s, ok := indexer.(SelectStore); ok {
		return s.Select(ctx, sel, fn)
	}
	var objs []interface{}
	var err error
	switch {
	case sel.Index != "":
		objs, err = indexer.ByIndex(sel.Index, sel.Value)
	case sel.Namespace != "":
		objs, err = indexer.ByIndex(cache.NamespaceIndex, sel.Namespace)
		if err != nil { // no namespace index: filter everything
			objs, err = indexer.List(), nil
		}
	default:
		objs = indexer.List()
	}
	if err != nil {
		return fmt.Errorf("select: %w", err)
	}
	for _, obj := range objs {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("select: %w", err)
		}
		ok, err := sel.Matches(obj)
		if err != nil {
			return err
		}
		if ok {
			if err := fn("", obj); err != nil {
				return err
			}
		}
	}
	return nil
}
