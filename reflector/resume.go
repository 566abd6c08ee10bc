package reflector

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"k8s.io/klog/v2"
)

// resumeCheck is what the server's current resourceVersion says about a
// warm start from the stored one.
type resumeCheck int

const (
	// resumeUnchecked: the check is off, or the server's resourceVersion
	// cannot be compared with the stored one (not kube-apiserver's
	// integers); the resumed watch settles on its first event or after
	// ResumeSettle, the last resort (see catchUpSettle).
	resumeUnchecked resumeCheck = iota
	// resumeBehind: the server has moved on since the stored RV; the
	// resumed watch is caught up once it delivered an event or a
	// bookmark at or past the server's RV (see catchUpTarget).
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
// (ResourceVersion "", Limit 1; Options.ResumeCheck), and returns the
// server's (empty when the check is off).
//
// A LIST that fails is retried as a failed relist is: the error goes to
// the WatchErrorHandler and the retry waits on the reflector's backoff
// (at least the server's Retry-After). Until the server has answered
// nothing is decided, so the stored state may be ahead of the server's
// and must not be served: resuming unchecked would watch from an RV the
// server has not reached, which kube-apiserver accepts and then stays
// silent. Every error is retried, a 401 or 403 included: without the
// right to list, the reflector could not relist either, and RBAC may be
// granted later, as client-go's reflector keeps retrying its list. The
// only error checkResume returns is ctx's, when ctx ends first.
func (r *Reflector) checkResume(ctx context.Context, rv string) (resumeCheck, string, error) {
	if r.opts.ResumeCheck != ResumeCheckList {
		return resumeUnchecked, "", nil
	}
	logger := klog.FromContext(ctx)
	var current string
	for failures := 1; ; failures++ {
		var err error
		current, err = r.serverResourceVersion(ctx)
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			return resumeUnchecked, "", ctx.Err()
		}
		d := r.retryDelay(err)
		msg := "Cannot read the server's current resourceVersion; the warm start waits, serving none of the stored objects, and retries"
		if apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err) {
			msg = "Not allowed to list, so the server's current resourceVersion cannot be read; the warm start waits, serving none of the stored objects, and retries (check the credentials and RBAC: a relist would need the same right)"
		}
		logger.Info(msg, "resourceVersion", rv, "failures", failures, "retryIn", d, "err", err)
		r.handleError(ctx, err)
		if !r.sleep(ctx, d) {
			return resumeUnchecked, "", ctx.Err()
		}
	}
	c, err := resourceversion.CompareResourceVersion(rv, current)
	switch {
	case err != nil:
		logger.Info("Cannot compare the stored resourceVersion with the server's (not kube-apiserver's integer resourceVersions); resuming the watch unchecked: a stored state ahead of this server cannot be detected",
			"resourceVersion", rv, "serverResourceVersion", current, "err", err)
		return resumeUnchecked, current, nil
	case c > 0:
		logger.Info("The stored resourceVersion is ahead of the server's: the cluster was recreated or restored from an older backup; discarding the resume and relisting",
			"resourceVersion", rv, "serverResourceVersion", current)
		return resumeAhead, current, nil
	case c == 0:
		logger.V(2).Info("The stored resourceVersion is the server's current one; synced once the watch is open", "resourceVersion", rv)
		return resumeCurrent, current, nil
	}
	logger.V(2).Info("The server has moved on since the stored resourceVersion; synced once the resumed watch reaches the server's", "resourceVersion", rv, "serverResourceVersion", current)
	return resumeBehind, current, nil
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
		return "", fmt.Errorf("list %s (limit 1): %w: %T: %v", r.opts.TypeDescription, ErrUnexpectedObject, obj, err)
	}
	if acc.GetResourceVersion() == "" {
		return "", fmt.Errorf("list %s (limit 1): %w", r.opts.TypeDescription, ErrNoResourceVersion)
	}
	return acc.GetResourceVersion(), nil
}
