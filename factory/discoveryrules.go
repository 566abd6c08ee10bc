package factory

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path"
	"strings"
)

// ResourceRule selects resources of the cluster's discovery, as an entry
// of Argo CD's resource.inclusions and resource.exclusions does: a
// resource matches when its group matches one of APIGroups and its kind
// one of Kinds, each a glob of path.Match ("*", "*.k8s.io", "Config*"),
// an empty list matching everything. The core group is "".
//
// Namespaces narrows the rule to the objects of namespaced resources in
// the namespaces it lists (globs too); a rule with Namespaces matches no
// cluster-scoped resource. Empty: every object of the resource, whatever
// its namespace, cluster-scoped resources included. Objects are selected
// by namespace in the factory, not by the server (a rule's globs cannot
// be a server-side selector): the informer of such a resource lists and
// watches it in every namespace and keeps only the matching objects.
type ResourceRule struct {
	APIGroups  []string
	Kinds      []string
	Namespaces []string
}

// String returns the rule as written in logs.
func (r ResourceRule) String() string {
	return fmt.Sprintf("{apiGroups: %q, kinds: %q, namespaces: %q}", r.APIGroups, r.Kinds, r.Namespaces)
}

// validate reports the first malformed glob of r.
func (r ResourceRule) validate() error {
	for _, list := range [][]string{r.APIGroups, r.Kinds, r.Namespaces} {
		for _, p := range list {
			if _, err := path.Match(p, ""); err != nil {
				return fmt.Errorf("rule %s: pattern %q: %w", r, p, err)
			}
		}
	}
	return nil
}

// matchesResource reports whether r selects the resource of group and
// kind, leaving namespaces aside.
func (r ResourceRule) matchesResource(group, kind string) bool {
	return matchAny(r.APIGroups, group) && matchAny(r.Kinds, kind)
}

// matchAny reports whether s matches one of patterns; true when there are
// none. The patterns are valid (validate).
func matchAny(patterns []string, s string) bool {
	if len(patterns) == 0 {
		return true
	}
	for _, p := range patterns {
		if ok, _ := path.Match(p, s); ok {
			return true
		}
	}
	return false
}

// resourceRules are DiscoveryOptions' Include and Exclude, validated.
type resourceRules struct {
	include, exclude []ResourceRule
}

func newResourceRules(include, exclude []ResourceRule) (resourceRules, error) {
	for _, r := range append(append([]ResourceRule(nil), include...), exclude...) {
		if err := r.validate(); err != nil {
			return resourceRules{}, fmt.Errorf("%w: %w", ErrInvalidOptions, err)
		}
	}
	if len(include) == 0 {
		include = []ResourceRule{{}} // everything
	}
	return resourceRules{include: include, exclude: exclude}, nil
}

// watches reports whether the resource of group and kind has an informer:
// an include rule selects some of its objects, and no exclude rule
// selects all of them (exclusions win).
func (rs resourceRules) watches(group, kind string, namespaced bool) bool {
	included := false
	for _, r := range rs.include {
		if r.matchesResource(group, kind) && (namespaced || len(r.Namespaces) == 0) {
			included = true
			break
		}
	}
	if !included {
		return false
	}
	for _, r := range rs.exclude {
		if r.matchesResource(group, kind) && len(r.Namespaces) == 0 {
			return false
		}
	}
	return true
}

// namespaceFilter returns, for a namespaced resource of group and kind,
// the function that keeps its objects' namespaces, and a version naming
// the rules that decide it (recorded as part of the informer's transform
// version, so that the stored objects of other rules are relisted, never
// served); nil and "" when every namespace is kept.
func (rs resourceRules) namespaceFilter(group, kind string) (func(namespace string) bool, string) {
	var inc, exc []ResourceRule
	narrowed := false
	for _, r := range rs.include {
		if r.matchesResource(group, kind) {
			inc = append(inc, r)
			narrowed = narrowed || len(r.Namespaces) > 0
		}
	}
	for _, r := range rs.exclude {
		if r.matchesResource(group, kind) {
			exc = append(exc, r)
			narrowed = narrowed || len(r.Namespaces) > 0
		}
	}
	if !narrowed {
		return nil, ""
	}
	for _, r := range inc {
		if len(r.Namespaces) == 0 {
			inc = nil // one rule keeps every namespace: only exclusions narrow
			break
		}
	}
	keep := func(ns string) bool {
		if inc != nil {
			in := false
			for _, r := range inc {
				if matchAny(r.Namespaces, ns) {
					in = true
					break
				}
			}
			if !in {
				return false
			}
		}
		for _, r := range exc {
			if len(r.Namespaces) > 0 && matchAny(r.Namespaces, ns) {
				return false
			}
		}
		return true
	}
	var b strings.Builder
	for _, r := range inc {
		fmt.Fprintf(&b, "+%q", r.Namespaces)
	}
	for _, r := range exc {
		fmt.Fprintf(&b, "-%q", r.Namespaces)
	}
	sum := sha256.Sum256([]byte(b.String()))
	return keep, "namespaces:" + hex.EncodeToString(sum[:6])
}
