package soak

import (
	"context"
	"maps"
	"strings"
	"testing"

	"github.com/warmcache/warmcache/internal/soakctl"
)

// writes builds a history of pods from writes "key@rev" (a put) and
// "-key@rev" (a delete), in order.
func writes(t *testing.T, ws ...string) *history {
	t.Helper()
	h := newHistory("pods", "configmaps", "widgets")
	var cs []change
	var last int64
	for _, w := range ws {
		c := change{resource: "pods"}
		if strings.HasPrefix(w, "-") {
			c.deleted, w = true, w[1:]
		}
		k, rv, ok := strings.Cut(w, "@")
		if !ok {
			t.Fatalf("bad write %q", w)
		}
		c.key, c.rev = k, mustInt(t, rv)
		cs = append(cs, c)
		last = c.rev
	}
	if err := h.record(cs, last); err != nil {
		t.Fatal(err)
	}
	return h
}

func mustInt(t *testing.T, s string) int64 {
	t.Helper()
	var n int64
	for _, r := range s {
		if r < '0' || r > '9' {
			t.Fatalf("not a number: %q", s)
		}
		n = n*10 + int64(r-'0')
	}
	return n
}

func TestHistoryStateAt(t *testing.T) {
	h := writes(t, "a@2", "b@3", "a@5", "-b@6", "c@7", "b@9")
	for _, tc := range []struct {
		rev  int64
		want map[string]int64
	}{
		{1, map[string]int64{}},
		{2, map[string]int64{"a": 2}},
		{4, map[string]int64{"a": 2, "b": 3}},
		{6, map[string]int64{"a": 5}},
		{8, map[string]int64{"a": 5, "c": 7}},
		{100, map[string]int64{"a": 5, "c": 7, "b": 9}},
	} {
		if got := h.StateAt("pods", tc.rev); !maps.Equal(got, tc.want) {
			t.Errorf("StateAt(%d) = %v, want %v", tc.rev, got, tc.want)
		}
	}
	if !h.Wrote("pods", "b", 6, true) || h.Wrote("pods", "b", 6, false) || h.Wrote("pods", "a", 3, false) || !h.Wrote("pods", "a", 5, false) {
		t.Error("Wrote answers wrong")
	}
	if err := h.record([]change{{resource: "pods", key: "z", rev: 8}}, 8); err == nil {
		t.Error("a write older than the last one was recorded")
	}
}

func TestHistoryMatchState(t *testing.T) {
	h := writes(t, "a@2", "b@3", "a@5", "-b@6", "c@7", "b@9")
	for _, tc := range []struct {
		name    string
		want    map[string]int64
		lo, hi  int64
		rev     int64
		ok      bool
		diffHas string
	}{
		{"at the low end", map[string]int64{"a": 2, "b": 3}, 3, 9, 3, true, ""},
		{"inside", map[string]int64{"a": 5}, 3, 9, 6, true, ""},
		{"at the high end", map[string]int64{"a": 5, "c": 7, "b": 9}, 3, 9, 9, true, ""},
		{"empty at the start", map[string]int64{}, 0, 9, 0, true, ""},
		{"after the range", map[string]int64{"a": 5, "c": 7, "b": 9}, 3, 8, 0, false, "phantom b@9"},
		{"before the range", map[string]int64{"a": 2}, 3, 9, 0, false, "missing b@3"},
		{"a mix of two revisions", map[string]int64{"a": 2, "c": 7}, 0, 9, 0, false, "closest"},
		{"a state never written", map[string]int64{"a": 4}, 0, 9, 0, false, "a@4"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rev, ok, diff := h.MatchState("pods", tc.want, tc.lo, tc.hi)
			if ok != tc.ok || rev != tc.rev || !strings.Contains(diff, tc.diffHas) {
				t.Errorf("MatchState = %d, %v, %q; want %d, %v, containing %q", rev, ok, diff, tc.rev, tc.ok, tc.diffHas)
			}
		})
	}
}

// testServer answers runCheck from a history, with a fixed current
// revision.
type testServer struct {
	*history
	rev int64
}

func (s testServer) WaitProgress(ctx context.Context, rev int64) error {
	return s.waitProgress(ctx, rev, nil)
}

func (s testServer) Revision(context.Context) (int64, error) { return s.rev, nil }

func ev(typ, key, rv string) soakctl.Event {
	return soakctl.Event{Type: typ, Resource: "pods", Key: key, ResourceVersion: rv}
}

func initial(key, rv string) soakctl.Event {
	e := ev(soakctl.TypeAdd, key, rv)
	e.Initial = true
	return e
}

func update(key, oldRV, rv string) soakctl.Event {
	e := ev(soakctl.TypeUpdate, key, rv)
	e.OldResourceVersion = oldRV
	return e
}

func unknownDelete(key, rv string) soakctl.Event {
	e := ev(soakctl.TypeDelete, key, rv)
	e.FinalStateUnknown = true
	return e
}

var synced = soakctl.Event{Type: soakctl.TypeSynced, Resource: "pods"}

// TestRunCheck: each history of one handler, against the server's writes
// a@2 b@3 a@5 -b@6 c@7 b@9 with the run started at revision 4.
func TestRunCheck(t *testing.T) {
	for _, tc := range []struct {
		name   string
		events []soakctl.Event
		want   []string // the checks that fail, in order
	}{
		{"cold start at the start, then the watch", []soakctl.Event{initial("a", "2"), initial("b", "3"), synced,
			update("a", "2", "5"), ev(soakctl.TypeDelete, "b", "6"), ev(soakctl.TypeAdd, "c", "7"), ev(soakctl.TypeAdd, "b", "9")}, nil},
		{"initial list at a later revision", []soakctl.Event{initial("a", "5"), initial("c", "7"), ev(soakctl.TypeAdd, "b", "9")}, nil},
		{"relist diff after the sync", []soakctl.Event{initial("a", "2"), initial("b", "3"), synced,
			update("a", "2", "5"), unknownDelete("b", "3"), ev(soakctl.TypeAdd, "c", "7")}, nil},
		{"initial list of two revisions", []soakctl.Event{initial("a", "2"), initial("c", "7"), synced}, []string{CheckInitialList}},
		{"initial list from before the start", []soakctl.Event{initial("a", "2"), synced}, []string{CheckInitialList}},
		{"an object deleted while down told", []soakctl.Event{initial("a", "5"), initial("b", "3"), initial("c", "7"), synced}, []string{CheckInitialList}},
		{"add of a held key", []soakctl.Event{initial("a", "2"), initial("b", "3"), synced, ev(soakctl.TypeAdd, "a", "5")}, []string{CheckHandlerContract}},
		{"update from another state", []soakctl.Event{initial("a", "2"), initial("b", "3"), synced, update("a", "1", "5")}, []string{CheckHandlerContract}},
		{"update of an unknown key", []soakctl.Event{initial("a", "2"), initial("b", "3"), synced, update("c", "6", "7")}, []string{CheckHandlerContract}},
		{"delete of an unknown key", []soakctl.Event{initial("a", "2"), initial("b", "3"), synced, ev(soakctl.TypeDelete, "c", "8")}, []string{CheckHandlerContract, CheckPhantom}},
		{"final state unknown not the last told", []soakctl.Event{initial("a", "2"), initial("b", "3"), synced, unknownDelete("b", "2")}, []string{CheckHandlerContract}},
		{"a state never written", []soakctl.Event{initial("a", "2"), initial("b", "3"), synced, update("a", "2", "4")}, []string{CheckPhantom}},
		{"initial add after live events", []soakctl.Event{initial("a", "2"), initial("b", "3"), update("a", "2", "5"), initial("c", "7")}, []string{CheckHandlerContract}},
		{"duplicate initial add", []soakctl.Event{initial("a", "2"), initial("a", "2"), initial("b", "3"), synced}, []string{CheckHandlerContract}},
		{"bad resourceVersion", []soakctl.Event{initial("a", "x")}, []string{CheckEventLog}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			server := testServer{history: writes(t, "a@2", "b@3", "a@5", "-b@6", "c@7", "b@9"), rev: 9}
			var got []string
			c := newRunCheck(1, server, 4, func(check, detail string) {
				got = append(got, check)
				t.Logf("%s: %s", check, detail)
			})
			for _, e := range tc.events {
				c.apply(t.Context(), e)
			}
			if strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Errorf("failed checks %q, want %q", got, tc.want)
			}
		})
	}
}

func TestRunCheckConverged(t *testing.T) {
	server := testServer{history: writes(t, "a@2", "b@3"), rev: 3}
	c := newRunCheck(1, server, 3, func(check, detail string) { t.Errorf("%s: %s", check, detail) })
	want := map[string]map[string]int64{"pods": {"a": 2, "b": 3}, "configmaps": {}, "widgets": {}}
	c.apply(t.Context(), initial("a", "2"))
	c.apply(t.Context(), initial("b", "3"))
	c.apply(t.Context(), synced)
	if ok, why, _ := c.Converged(want); ok || !strings.Contains(why, "not synced") {
		t.Errorf("Converged before the other handlers synced = %v, %q", ok, why)
	}
	if c.Phase() != "initial list" {
		t.Errorf("Phase = %q, want initial list", c.Phase())
	}
	for _, r := range []string{"configmaps", "widgets"} {
		c.apply(t.Context(), soakctl.Event{Type: soakctl.TypeSynced, Resource: r})
	}
	if ok, why, _ := c.Converged(want); !ok {
		t.Errorf("not converged: %s", why)
	}
	want["pods"]["c"] = 4
	ok, why, changed := c.Converged(want)
	if ok || !strings.Contains(why, "missing c@4") {
		t.Errorf("Converged with c missing = %v, %q", ok, why)
	}
	c.apply(t.Context(), soakctl.Event{Type: soakctl.TypeRuntime, Runtime: &soakctl.Runtime{Goroutines: 7}})
	select {
	case <-changed:
	default:
		t.Error("the change channel was not closed by a new event")
	}
	if rt := c.Runtime(); rt == nil || rt.Goroutines != 7 || c.Phase() != "synced" {
		t.Errorf("Runtime %+v, Phase %q", rt, c.Phase())
	}
}
