package e2e

import (
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/tools/cache"
)

func resourceVersionOf(obj interface{}) string {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return ""
	}
	return m.GetResourceVersion()
}

// split separates the adds flagged isInInitialList (the initial list or
// the warm-start replay) from the other events, up to the "synced" line
// and after it. Only events before "synced" may be initial.
func split(es []event) (initial state, rest []event, err error) {
	initial = state{}
	for _, e := range es {
		switch {
		case e.Type == "synced":
		case e.Type == "add" && e.Initial:
			if _, dup := initial[e.Key]; dup {
				return nil, nil, fmt.Errorf("initial add of %s twice", e.Key)
			}
			initial[e.Key] = e.ResourceVersion
		default:
			rest = append(rest, e)
		}
	}
	return initial, rest, nil
}

// fold applies events to a copy of s, as a handler keeping its own map
// would, and returns the result.
func fold(s state, es []event) state {
	out := state{}
	for k, v := range s {
		out[k] = v
	}
	for _, e := range es {
		switch e.Type {
		case "add", "update":
			out[e.Key] = e.ResourceVersion
		case "delete":
			delete(out, e.Key)
		}
	}
	return out
}

// checkChanges reports how the non-initial events differ from exactly
// the changes ch (one event per changed object, ignoring the keys in
// ignore): adds of the created objects at their resourceVersion, updates
// of the updated ones from their old to their new resourceVersion, deletes
// of the deleted ones. relisted says the changes were found by a relist:
// deletes then carry the last known state (its resourceVersion, as a
// DeletedFinalStateUnknown); a watch delete carries the deletion's newer
// resourceVersion.
func checkChanges(rest []event, ch changes, relisted bool, ignore ...string) string {
	skip := map[string]bool{}
	for _, k := range ignore {
		skip[k] = true
	}
	var problems []string
	seen := map[string]bool{}
	for _, e := range rest {
		if skip[e.Key] {
			continue
		}
		if seen[e.Key] {
			problems = append(problems, fmt.Sprintf("second event for %s: %+v", e.Key, e))
			continue
		}
		seen[e.Key] = true
		switch e.Type {
		case "add":
			if rv, ok := ch.created[e.Key]; !ok || rv != e.ResourceVersion {
				problems = append(problems, fmt.Sprintf("unexpected add %+v (created at %q)", e, rv))
			}
		case "update":
			rvs, ok := ch.updated[e.Key]
			if !ok || rvs[0] != e.OldResourceVersion || rvs[1] != e.ResourceVersion {
				problems = append(problems, fmt.Sprintf("unexpected update %+v (want %v)", e, rvs))
			}
		case "delete":
			rv, ok := ch.deleted[e.Key]
			switch {
			case !ok:
				problems = append(problems, fmt.Sprintf("unexpected delete %+v", e))
			case relisted && (!e.FinalStateUnknown || e.ResourceVersion != rv):
				problems = append(problems, fmt.Sprintf("delete %+v, want a DeletedFinalStateUnknown with the last state at %s", e, rv))
			case !relisted && (e.FinalStateUnknown || !rvLess(rv, e.ResourceVersion)):
				problems = append(problems, fmt.Sprintf("delete %+v, want a watch delete newer than %s", e, rv))
			}
		default:
			problems = append(problems, fmt.Sprintf("unexpected event %+v", e))
		}
	}
	for _, set := range []state{ch.created, ch.deleted} {
		for k := range set {
			if !seen[k] {
				problems = append(problems, "no event for "+k)
			}
		}
	}
	for k := range ch.updated {
		if !seen[k] {
			problems = append(problems, "no event for "+k)
		}
	}
	sort.Strings(problems)
	return strings.Join(problems, "\n")
}
