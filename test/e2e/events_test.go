package e2e

import (
	"fmt"
	"sort"
	"strings"

	"k8s.io/client-go/tools/cache"

	"github.com/warmcache/warmcache/internal/demo"
	"github.com/warmcache/warmcache/internal/eventlog"
)

// recorder is a cache.ResourceEventHandler that records events as the
// controller (democtl) logs them.
type recorder struct{ *demo.EventLog }

func newRecorder() recorder { return recorder{demo.NewEventLog()} }

func (r recorder) OnAdd(obj interface{}, initial bool) {
	r.Add(event{Type: "add", Key: keyOf(obj), ResourceVersion: eventlog.ResourceVersion(obj), Initial: initial})
}

func (r recorder) OnUpdate(oldObj, newObj interface{}) {
	r.Add(event{Type: "update", Key: keyOf(newObj), ResourceVersion: eventlog.ResourceVersion(newObj), OldResourceVersion: eventlog.ResourceVersion(oldObj)})
}

func (r recorder) OnDelete(obj interface{}) {
	_, unknown := obj.(cache.DeletedFinalStateUnknown)
	r.Add(event{Type: "delete", Key: keyOf(obj), ResourceVersion: eventlog.ResourceVersion(obj), FinalStateUnknown: unknown})
}

func keyOf(obj interface{}) string {
	k, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		return "<" + err.Error() + ">"
	}
	return k
}

// split separates the adds flagged isInInitialList (the initial list or
// the warm-start replay) from the other object events ("synced" and
// "steady" lines are dropped).
func split(es []event) (initial state, rest []event, err error) {
	initial = state{}
	for _, e := range es {
		switch {
		case e.Type == "synced" || e.Type == "steady":
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
func fold(s state, es []event) state { return demo.Fold(s, es) }

// checkChanges reports how the non-initial events differ from exactly
// the changes ch, ignoring the keys in ignore: for each created object one
// add at its resourceVersion, for each updated one one update from its old
// to its new resourceVersion, for each deleted one its delete and nothing
// for any other object. relisted says the changes were found by a relist:
// a delete then carries the last known state, as a
// DeletedFinalStateUnknown at the stored resourceVersion. A watch instead
// sees what the apiserver does for a bound pod deleted with a zero grace
// period: possibly an update setting deletionTimestamp, then the delete at
// a newer resourceVersion.
func checkChanges(rest []event, ch changes, relisted bool, ignore ...string) string {
	skip := map[string]bool{}
	for _, k := range ignore {
		skip[k] = true
	}
	byKey := map[string][]event{}
	var order []string
	for _, e := range rest {
		if skip[e.Key] {
			continue
		}
		if _, ok := byKey[e.Key]; !ok {
			order = append(order, e.Key)
		}
		byKey[e.Key] = append(byKey[e.Key], e)
	}
	var problems []string
	bad := func(key string, want string) {
		problems = append(problems, fmt.Sprintf("%s: events %+v, want %s", key, byKey[key], want))
	}
	for _, key := range order {
		es := byKey[key]
		if rv, ok := ch.created[key]; ok {
			if len(es) != 1 || es[0].Type != "add" || es[0].ResourceVersion != rv {
				bad(key, "one add at "+rv)
			}
			continue
		}
		if rvs, ok := ch.updated[key]; ok {
			if len(es) != 1 || es[0].Type != "update" || es[0].OldResourceVersion != rvs[0] || es[0].ResourceVersion != rvs[1] {
				bad(key, fmt.Sprintf("one update from %s to %s", rvs[0], rvs[1]))
			}
			continue
		}
		rv, ok := ch.deleted[key]
		switch {
		case !ok:
			bad(key, "none: the object did not change")
		case relisted:
			if len(es) != 1 || es[0].Type != "delete" || !es[0].FinalStateUnknown || es[0].ResourceVersion != rv {
				bad(key, "one DeletedFinalStateUnknown with the last state at "+rv)
			}
		default:
			last := es[len(es)-1]
			okDelete := last.Type == "delete" && !last.FinalStateUnknown && rvLess(rv, last.ResourceVersion)
			switch {
			case len(es) == 1 && okDelete:
			case len(es) == 2 && okDelete && es[0].Type == "update" && es[0].OldResourceVersion == rv &&
				rvLess(rv, es[0].ResourceVersion) && !rvLess(last.ResourceVersion, es[0].ResourceVersion):
			default:
				bad(key, "a watch delete newer than "+rv+", possibly after an update from "+rv)
			}
		}
	}
	for _, set := range []state{ch.created, ch.deleted} {
		for k := range set {
			if _, ok := byKey[k]; !ok {
				problems = append(problems, "no event for "+k)
			}
		}
	}
	for k := range ch.updated {
		if _, ok := byKey[k]; !ok {
			problems = append(problems, "no event for "+k)
		}
	}
	sort.Strings(problems)
	if len(problems) > 10 {
		problems = append(problems[:10], fmt.Sprintf("... %d more", len(problems)-10))
	}
	return strings.Join(problems, "\n")
}

// checkStartedAs reports how the events of a controller's run differ from
// a cold start's over want: up to its "synced" line, exactly want as
// initial-list adds and nothing else; after it, no object event (nothing
// changed after the start). A warm start must look exactly so, whatever
// changed while the controller was down.
func checkStartedAs(es []event, want state) string {
	cut := -1
	for i, e := range es {
		if e.Type == "synced" {
			cut = i
			break
		}
	}
	if cut < 0 {
		return "no synced line"
	}
	initial, before, err := split(es[:cut])
	if err != nil {
		return err.Error()
	}
	var problems []string
	if len(before) != 0 {
		problems = append(problems, fmt.Sprintf("%d events other than initial adds before the sync, the first %+v", len(before), before[0]))
	}
	if d := initial.diff(want); d != "" {
		problems = append(problems, "the initial list differs from the server's state: "+d)
	}
	if _, after, _ := split(es[cut:]); len(after) != 0 {
		problems = append(problems, fmt.Sprintf("%d events after the sync, the first %+v", len(after), after[0]))
	}
	return strings.Join(problems, "; ")
}
