package reflector

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"k8s.io/klog/v2"
)

// resumeCheck is what the server's current resourceVersion says about a
// warm start from the stored one.
type resumeCheck int

const (
	// resumeUnchecked: the check is off or failed; the resumed watch
	// settles on its first event or after ResumeSettle, as without it.
	resumeUnchecked resumeCheck = iota
	// resumeBehind: the server has moved on since the stored RV; the
	// resumed watch settles on its first event or after ResumeSettle.
	resumeBehind
	// resumeCurrent: the stored RV is the server's current one; nothing
	// can be pending, and the resumed watch is synced once it is open.
	resumeCurrent
	// resumeAhead: the stored RV is one the server has not reached (the
	// cluster was recreated, or its etcd restored from an older backup);
	// the stored state is not the server's and must be relisted.
	resumeAhead
)

// checkResume compares the stored resourceVersion rv with the server's
// current one, read with a consistent LIST of at most one object
// (ResourceVersion "", Limit 1; Options.ResumeCheck).
func (r *Reflector) checkResume(ctx context.Context, rv string) resumeCheck {
	if r.opts.ResumeCheck != ResumeCheckList {
		return resumeUnchecked
	}
	logger := klog.FromContext(ctx)
	current, err := r.serverResourceVersion(ctx)
	if err != nil {
		if ctx.Err() == nil {
			logger.Info("Could not read the server's current resourceVersion; resuming the watch unchecked", "resourceVersion", rv, "err", err)
		}
		return resumeUnchecked
	}
	c, err := resourceversion.CompareResourceVersion(rv, current)
	switch {
	case err != nil:
		logger.Info("Cannot compare the stored resourceVersion with the server's; resuming the watch unchecked", "resourceVersion", rv, "serverResourceVersion", current, "err", err)
		return resumeUnchecked
	case c > 0:
		logger.Info("The stored resourceVersion is ahead of the server's: the cluster was recreated or restored from an older backup; discarding the resume and relisting",
			"resourceVersion", rv, "serverResourceVersion", current)
		return resumeAhead
	case c == 0:
		logger.V(2).Info("The stored resourceVersion is the server's current one; synced once the watch is open", "resourceVersion", rv)
		return resumeCurrent
	}
	return resumeBehind
}

// serverResourceVersion returns the resourceVersion of a consistent LIST
// of at most one object: the server's current one.
func (r *Reflector) serverResourceVersion(ctx context.Context) (string, error) {
	r.metrics.ListRequested()
	obj, err := r.lw.ListWithContext(ctx, metav1.ListOptions{ResourceVersion: "", Limit: 1})
	if err != nil {
		return "", fmt.Errorf("list %s (limit 1): %w", r.opts.TypeDescription, err)
	}
	acc, err := meta.ListAccessor(obj)
	if err != nil {
		return "", fmt.Errorf("list %s (limit 1): %w", r.opts.TypeDescription, err)
	}
	if acc.GetResourceVersion() == "" {
		return "", fmt.Errorf("list %s (limit 1): no resourceVersion", r.opts.TypeDescription)
	}
	return acc.GetResourceVersion(), nil
}
