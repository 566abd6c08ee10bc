package store

import (
	"errors"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
)

// ErrInvalidScope is returned by Scope.Canonical for a selector that does
// not parse.
var ErrInvalidScope = errors.New("invalid scope")

// Scope is what an informer lists and watches of a resource: a namespace,
// selectors and a shard. It is part of the identity a persistent store
// records, so that informers of different scopes never share data.
type Scope struct {
	// Namespace restricts to one namespace; "" is all.
	Namespace string
	// LabelSelector and FieldSelector restrict the list/watch, in the
	// syntax of labels.Parse and fields.ParseSelector.
	LabelSelector, FieldSelector string
	// Shard names a shard of a sharded list/watch. Stores only record it;
	// the ListerWatcher applies it (the factory's ListerWatchers send it as the
	// server's shard selector, metav1.ListOptions.ShardSelector).
	Shard string
}

// Canonical validates s and returns it in the one form stores record: the
// label selector parsed and printed again (requirements sorted, so that
// "b=2,a=1" and "a=1,b=2" are the same scope), the field selector trimmed
// (compared as written). An unparsable selector returns an error wrapping
// ErrInvalidScope.
func (s Scope) Canonical() (Scope, error) {
	if v := strings.TrimSpace(s.LabelSelector); v != "" {
		sel, err := labels.Parse(v)
		if err != nil {
			return s, fmt.Errorf("%w: label selector %q: %w", ErrInvalidScope, s.LabelSelector, err)
		}
		s.LabelSelector = sel.String()
	} else {
		s.LabelSelector = ""
	}
	s.FieldSelector = strings.TrimSpace(s.FieldSelector)
	if s.FieldSelector != "" {
		if _, err := fields.ParseSelector(s.FieldSelector); err != nil {
			return s, fmt.Errorf("%w: field selector %q: %w", ErrInvalidScope, s.FieldSelector, err)
		}
	}
	return s, nil
}
