package soak

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/warmcache/warmcache/internal/soakctl"
)

// maxFailedConverges ends a run after this many recoveries in a row that
// did not converge: the controller is broken, the rest would only repeat.
const maxFailedConverges = 3

// listPage is the page size of the soak's LISTs.
const listPage = 500

// listVersions lists a resource's metadata in pages (protobuf), in every
// namespace, and returns the objects' resourceVersions by namespace/name,
// and the resourceVersion of the list.
func (s *soak) listVersions(ctx context.Context, r soakctl.Resource) (map[string]int64, int64, error) {
	var objs map[string]int64
	var rv int64
	err := s.retry(ctx, "list "+r.Name, func(ctx context.Context) error {
		objs = map[string]int64{}
		opts := metav1.ListOptions{Limit: listPage}
		for page := 0; ; page++ {
			l, err := s.meta.Resource(r.GVR).List(ctx, opts)
			if err != nil {
				return err
			}
			if page == 0 {
				if rv, err = strconv.ParseInt(l.ResourceVersion, 10, 64); err != nil {
					return fmt.Errorf("resourceVersion %q: %w", l.ResourceVersion, err)
				}
			}
			for _, m := range l.Items {
				v, err := strconv.ParseInt(m.ResourceVersion, 10, 64)
				if err != nil {
					return fmt.Errorf("%s/%s: resourceVersion %q: %w", m.Namespace, m.Name, m.ResourceVersion, err)
				}
				objs[m.Namespace+"/"+m.Name] = v
			}
			if l.Continue == "" {
				return nil
			}
			opts.Continue = l.Continue
		}
	})
	return objs, rv, err
}

// retry runs f until it succeeds, a minute at most: a request may fail
// once just after an apiserver restart.
func (s *soak) retry(ctx context.Context, what string, f func(context.Context) error) error {
	var last error
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		if last = f(ctx); last != nil {
			s.logf("%s: %v (retrying)", what, last)
			return false, nil
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("soak: %s: %w (last: %v)", what, err, last)
	}
	return nil
}

// list lists a resource in pages, in every namespace, as the objects (by
// namespace/name, in JSON's shape).
func (s *soak) list(ctx context.Context, r soakctl.Resource) (map[string]map[string]interface{}, error) {
	var objs map[string]map[string]interface{}
	err := s.retry(ctx, "list "+r.Name, func(ctx context.Context) error {
		objs = map[string]map[string]interface{}{}
		opts := metav1.ListOptions{Limit: listPage}
		for {
			l, err := s.dyn.Resource(r.GVR).List(ctx, opts)
			if err != nil {
				return err
			}
			for _, u := range l.Items {
				objs[objectKey(u.Object)] = u.Object
			}
			if l.GetContinue() == "" {
				return nil
			}
			opts.Continue = l.GetContinue()
		}
	})
	return objs, err
}

// converge pauses the churn, lists every resource, and waits until the
// controller's handlers hold exactly what the LISTs returned. It returns
// the seconds from since (the end of the fault) until then, or -1 when
// they did not within the timeout; the churn stays paused. Each LIST is
// also compared with etcd's history at its resourceVersion.
func (s *soak) converge(ctx context.Context, why string, since time.Time) float64 {
	s.churn.pause()
	want := map[string]map[string]int64{}
	for _, r := range soakctl.Resources {
		objs, rv, err := s.listVersions(ctx, r)
		if err != nil {
			s.fail(CheckStep, fmt.Sprintf("after %s: %v", why, err))
			return -1
		}
		want[r.Name] = objs
		if err := s.oracle.WaitProgress(ctx, rv); err != nil {
			s.fail(CheckOracle, err.Error())
			continue
		}
		if d := diffStates(want[r.Name], s.oracle.StateAt(r.Name, rv)); d != "" {
			s.fail(CheckOracle, fmt.Sprintf("after %s, a LIST of %s at %d differs from etcd's history: %s", why, r.Name, rv, d))
		}
	}
	for attempt := 1; ; attempt++ {
		s.mu.Lock()
		c := s.current
		s.mu.Unlock()
		if c == nil {
			s.fail(CheckStep, fmt.Sprintf("after %s: no controller running", why))
			return -1
		}
		reason, ok := s.waitConverged(ctx, c, want)
		if ok {
			s.mu.Lock()
			s.report.Checks.Converged++
			s.mu.Unlock()
			return time.Since(since).Seconds()
		}
		if ctx.Err() != nil {
			return -1
		}
		if exited, err := c.Exited(); exited {
			s.fail(CheckExit, fmt.Sprintf("run %d exited (%v); its log:\n%s", c.run, err, tail(c.logPath, 4096)))
		} else {
			s.fail(CheckConverge, fmt.Sprintf("run %d: not converged %v after the %s: %s", c.run, s.cfg.ConvergeTimeout, why, reason))
		}
		if attempt == maxFailedConverges {
			return -1
		}
		// Start over: a new run on the same file.
		s.logf("restarting the controller after a failed recovery")
		s.killController()
		s.checkFile(ctx, "a failed recovery")
		if err := s.startController(ctx); err != nil {
			s.fail(CheckStep, err.Error())
			return -1
		}
	}
}

// waitConverged waits until c's handlers hold want, c exits, or the
// timeout; it returns why not.
func (s *soak) waitConverged(ctx context.Context, c *controller, want map[string]map[string]int64) (string, bool) {
	timeout := time.NewTimer(s.cfg.ConvergeTimeout)
	defer timeout.Stop()
	// Comparing costs a pass over every key: at most every 50ms.
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		ok, why, changed := c.check.Converged(want)
		if ok {
			return "", true
		}
		select {
		case <-changed:
		case <-c.done:
			if ok, why, _ := c.check.Converged(want); ok {
				return "", true
			} else {
				return "exited: " + why, false
			}
		case <-timeout.C:
			return why, false
		case <-ctx.Done():
			return context.Cause(ctx).Error(), false
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
		}
	}
}

// checkFile reads the cache file with the snapshot CLI while the
// controller is down: `snapshot verify` must find nothing, and each
// resource recorded complete must hold exactly the server's objects at the
// resourceVersion it recorded (invariant 1: a kill at any moment leaves a
// file that is the server's state at its resourceVersion).
func (s *soak) checkFile(ctx context.Context, why string) {
	if _, err := os.Stat(s.file); errors.Is(err, fs.ErrNotExist) {
		return // killed before it created the file
	}
	problems, err := s.snap.verify(ctx, s.file)
	s.mu.Lock()
	s.report.Checks.Verified++
	s.mu.Unlock()
	switch {
	case err != nil:
		s.fail(CheckVerify, fmt.Sprintf("after %s: %v", why, err))
		return
	case problems != "":
		s.fail(CheckVerify, fmt.Sprintf("after %s: %s", why, problems))
		return
	}
	infos, err := s.snap.info(ctx, s.file)
	if err != nil {
		s.fail(CheckFile, fmt.Sprintf("after %s: %v", why, err))
		return
	}
	for _, r := range soakctl.Resources {
		var info *fileResource
		for i := range infos {
			if infos[i].Group == r.GVR.Group && infos[i].Resource == r.GVR.Resource {
				info = &infos[i]
			}
		}
		if info == nil || !info.Complete {
			continue // not yet listed whole
		}
		rv, err := strconv.ParseInt(info.ResourceVersion, 10, 64)
		if err != nil {
			s.fail(CheckFile, fmt.Sprintf("after %s, %s records resourceVersion %q", why, r.Name, info.ResourceVersion))
			continue
		}
		if err := s.oracle.WaitProgress(ctx, rv); err != nil {
			s.fail(CheckFile, fmt.Sprintf("after %s, %s records resourceVersion %d, which etcd's history does not reach: %v", why, r.Name, rv, err))
			continue
		}
		objs, err := s.snap.listVersions(ctx, s.file, info.Name)
		if err != nil {
			s.fail(CheckFile, fmt.Sprintf("after %s: %v", why, err))
			continue
		}
		if d := diffStates(objs, s.oracle.StateAt(r.Name, rv)); d != "" {
			s.fail(CheckFile, fmt.Sprintf("after %s, the file's %s at its resourceVersion %d are not the server's: %s", why, r.Name, rv, d))
		}
	}
	s.mu.Lock()
	s.report.Checks.Files++
	s.mu.Unlock()
}

// final stops the controller (SIGTERM, the churn paused) once it has
// converged, checks the file, and compares every object the file holds
// with the server's, content included; then checks the bounds.
func (s *soak) final(ctx context.Context) error {
	rec := FaultRecord{At: s.since(), Kind: "final check", Converge: s.converge(ctx, "the end", time.Now())}
	s.mu.Lock()
	c := s.current
	s.current = nil
	s.mu.Unlock()
	if c != nil {
		if err := c.Stop(); err != nil {
			s.fail(CheckExit, fmt.Sprintf("%v; its log:\n%s", err, tail(c.logPath, 4096)))
		}
		s.endRun(c)
	}
	s.checkFile(ctx, "the final stop")
	for _, r := range soakctl.Resources {
		want, err := s.list(ctx, r)
		if err != nil {
			return err
		}
		got, err := s.snap.list(ctx, s.file, displayName(r))
		if err != nil {
			s.fail(CheckContent, err.Error())
			continue
		}
		if d := diffContent(got, want); d != "" {
			s.fail(CheckContent, fmt.Sprintf("%s: the file's objects differ from the server's: %s", r.Name, d))
		}
		s.mu.Lock()
		s.report.Checks.Content += len(want)
		s.mu.Unlock()
	}
	rec.Detail = "churn stopped, the controller converged, stopped (SIGTERM), its file compared with the server, content included"
	s.record(rec)
	s.logf("final check: converged in %.1fs", rec.Converge)
	s.report.Bounds = bounds(s.samplesCopy(), s.report.Elapsed)
	for _, b := range s.report.Bounds {
		if !b.OK {
			s.fail(CheckBounds, fmt.Sprintf("%s grew: %s", b.Metric, b.Detail))
		}
	}
	return nil
}

// displayName is how the snapshot CLI names a resource.
func displayName(r soakctl.Resource) string {
	if r.GVR.Group == "" {
		return r.GVR.Resource
	}
	return r.GVR.Resource + "." + r.GVR.Group
}

// diffContent describes how the objects got differ from want (by key),
// their content included, "" when equal. apiVersion and kind are left
// out: a LIST's items do not carry them.
func diffContent(got, want map[string]map[string]interface{}) string {
	var out []string
	for k, w := range want {
		g, ok := got[k]
		switch {
		case !ok:
			out = append(out, "missing "+k)
		case objectRV(g) != objectRV(w):
			out = append(out, fmt.Sprintf("%s at %d, the server's at %d", k, objectRV(g), objectRV(w)))
		default:
			if fields := differentFields(g, w); len(fields) > 0 {
				out = append(out, fmt.Sprintf("%s differs in %s", k, strings.Join(fields, ", ")))
			}
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			out = append(out, "phantom "+k)
		}
	}
	return summary(out, "objects")
}

// differentFields names the top-level and metadata fields in which two
// objects differ, after a round trip through JSON (numbers alike).
func differentFields(a, b map[string]interface{}) []string {
	norm := func(o map[string]interface{}) map[string]interface{} {
		raw, err := json.Marshal(o)
		if err != nil {
			return o
		}
		var out map[string]interface{}
		if json.Unmarshal(raw, &out) != nil {
			return o
		}
		delete(out, "apiVersion")
		delete(out, "kind")
		return out
	}
	a, b = norm(a), norm(b)
	var fields []string
	keys := map[string]bool{}
	for k := range a {
		keys[k] = true
	}
	for k := range b {
		keys[k] = true
	}
	for k := range keys {
		if reflect.DeepEqual(a[k], b[k]) {
			continue
		}
		am, aok := a[k].(map[string]interface{})
		bm, bok := b[k].(map[string]interface{})
		if k == "metadata" && aok && bok {
			for _, f := range differentFields(am, bm) {
				fields = append(fields, "metadata."+f)
			}
			continue
		}
		fields = append(fields, k)
	}
	sort.Strings(fields)
	return fields
}

// sample measures the controller, if one runs.
func (s *soak) sample() {
	s.mu.Lock()
	c, faulting := s.current, s.faulting
	s.mu.Unlock()
	if c == nil {
		return
	}
	if exited, _ := c.Exited(); exited {
		return
	}
	rss, err := rssAnon(c.Pid())
	if err != nil {
		return // exited meanwhile
	}
	smp := Sample{T: s.since(), Run: c.run, RSSAnon: rss, Steady: !faulting && c.check.Synced()}
	if rt := c.check.Runtime(); rt != nil {
		smp.Goroutines, smp.HeapBytes = rt.Goroutines, rt.HeapBytes
	}
	if fi, err := os.Stat(s.file); err == nil {
		smp.FileBytes = fi.Size()
	}
	s.mu.Lock()
	s.report.Samples = append(s.report.Samples, smp)
	s.mu.Unlock()
}

func (s *soak) samplesCopy() []Sample {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Sample(nil), s.report.Samples...)
}
