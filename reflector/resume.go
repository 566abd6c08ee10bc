package reflector

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"k8s.io/client-go/tools/cache"
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

// resumeAnswer is what the resume check found.
type resumeAnswer struct {
	check resumeCheck
	// rv is the server's current resourceVersion ("" when the check is
	// off).
	rv string
	// items, when whole is set, are every object of the resource at rv:
	// the check listed a page of a small store (Options.StoredVersions)
	// and the server had no more.
	items []runtime.Object
	whole bool
	// same is set when whole or versions and the server's objects are the
	// stored state: the same keys at the same resourceVersions.
	same bool
	// versions is set when the check listed the metadata of every object
	// (Options.ListVersions) and compared it with the stored state.
	versions versionCheck
}

// checkResume compares the stored resourceVersion rv with the server's
// current one, read with a consistent LIST (ResourceVersion "";
// Options.ResumeCheck) of at most one object, or, when the store holds at
// most ListPageSize objects (Options.StoredVersions), of a page: if that page
// is the whole resource, it is compared with the stored state too. A larger
// store of at most VersionCheckLimit objects is compared with the metadata
// of every object instead (Options.ListVersions), when that list answers;
// when it fails, the check falls back to the LIST of one object.
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
func (r *Reflector) checkResume(ctx context.Context, rv string) (resumeAnswer, error) {
	if r.opts.ResumeCheck != ResumeCheckList {
		return resumeAnswer{check: resumeUnchecked}, nil
	}
	// The check lists pages (metadata, or the whole of a small resource):
	// it holds a pass of Options.ListGate, as a relist does, given back
	// while it backs off; Run gives it back once the answer is pushed.
	if err := r.enterGate(ctx); err != nil {
		return resumeAnswer{check: resumeUnchecked}, err
	}
	logger := klog.FromContext(ctx)
	var stored map[string]string
	var keyOf cache.KeyFunc
	limit := int64(1)
	var versions *metav1.PartialObjectMetadataList
	if r.opts.StoredVersions != nil {
		most := int(r.opts.ListPageSize)
		if r.opts.ListVersions != nil && r.opts.VersionCheckLimit > most {
			most = r.opts.VersionCheckLimit
		}
		var ok bool
		stored, keyOf, ok = r.opts.StoredVersions(most)
		switch {
		case !ok:
		case len(stored) <= int(r.opts.ListPageSize):
			limit = r.opts.ListPageSize
		default:
			var err error
			versions, err = r.listVersionsPage(ctx, metav1.ListOptions{ResourceVersion: "", Limit: versionPage(len(stored))})
			if err != nil {
				if ctx.Err() != nil {
					return resumeAnswer{check: resumeUnchecked}, ctx.Err()
				}
				logger.V(2).Info("Cannot list the metadata of the resource for the version check; checking the resourceVersion alone", "err", err)
			}
		}
	}
	var list runtime.Object
	var current, cont string
	for failures := 1; ; failures++ {
		if versions != nil {
			current = versions.ResourceVersion
			break
		}
		var err error
		list, current, cont, err = r.resumeList(ctx, limit)
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			return resumeAnswer{check: resumeUnchecked}, ctx.Err()
		}
		d := r.retryDelay(err)
		msg := "Cannot read the server's current resourceVersion; the warm start waits, serving none of the stored objects, and retries"
		if apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err) {
			msg = "Not allowed to list, so the server's current resourceVersion cannot be read; the warm start waits, serving none of the stored objects, and retries (check the credentials and RBAC: a relist would need the same right)"
		}
		logger.Info(msg, "resourceVersion", rv, "failures", failures, "retryIn", d, "err", err)
		r.handleError(ctx, err)
		r.leaveGate() // holding nothing while it waits
		if !r.sleep(ctx, d) {
			return resumeAnswer{check: resumeUnchecked}, ctx.Err()
		}
		if err := r.enterGate(ctx); err != nil {
			return resumeAnswer{check: resumeUnchecked}, err
		}
	}
	a := resumeAnswer{rv: current}
	c, err := resourceversion.CompareResourceVersion(rv, current)
	switch {
	case err != nil:
		logger.Info("Cannot compare the stored resourceVersion with the server's (not kube-apiserver's integer resourceVersions); resuming the watch unchecked: a stored state ahead of this server cannot be detected",
			"resourceVersion", rv, "serverResourceVersion", current, "err", err)
		a.check = resumeUnchecked
		return a, nil
	case c > 0:
		logger.Info("The stored resourceVersion is ahead of the server's: the cluster was recreated or restored from an older backup; discarding the resume and relisting",
			"resourceVersion", rv, "serverResourceVersion", current)
		a.check = resumeAhead
		return a, nil
	case c == 0:
		logger.V(2).Info("The stored resourceVersion is the server's current one; synced once the watch is open", "resourceVersion", rv)
		a.check = resumeCurrent
		return a, nil
	}
	a.check = resumeBehind
	if versions != nil {
		var ok bool
		if a.versions, ok = r.checkVersions(ctx, versions, stored, keyOf); ok {
			a.same = len(a.versions.pending) == 0
		}
		logger.V(2).Info("The server has moved on since the stored resourceVersion", "resourceVersion", rv, "serverResourceVersion", current,
			"versionsChecked", ok, "unchanged", a.same, "changedObjects", len(a.versions.pending))
		return a, nil
	}
	if limit > 1 && cont == "" {
		a.whole = true
		if err := meta.EachListItemWithAlloc(list, func(o runtime.Object) error {
			a.items = append(a.items, o)
			return nil
		}); err != nil {
			// Not usable as the whole state: catch up on the watch.
			logger.V(2).Info("Cannot read the resume check's page; catching up on the watch", "err", err)
			a.whole, a.items = false, nil
		} else {
			a.same = sameState(a.items, stored, keyOf)
		}
	}
	logger.V(2).Info("The server has moved on since the stored resourceVersion", "resourceVersion", rv, "serverResourceVersion", current,
		"wholeResourceListed", a.whole, "unchanged", a.same)
	return a, nil
}

// sameState reports whether items are exactly the stored state: the same
// keys, each at the same resourceVersion. resourceVersions are unique per
// write, so equal states mean no object of the resource changed between
// the two, or only objects created and deleted in between.
func sameState(items []runtime.Object, stored map[string]string, keyOf cache.KeyFunc) bool {
	if len(items) != len(stored) {
		return false
	}
	for _, o := range items {
		key, err := keyOf(o)
		if err != nil {
			return false
		}
		acc, err := meta.Accessor(o)
		if err != nil {
			return false
		}
		if rv, ok := stored[key]; !ok || rv != acc.GetResourceVersion() {
			return false
		}
	}
	return true
}

// resumeList sends the resume check's consistent LIST of at most limit
// objects and returns the list, its resourceVersion (the server's
// current one) and its continue token.
func (r *Reflector) resumeList(ctx context.Context, limit int64) (runtime.Object, string, string, error) {
	r.metrics.ListRequested()
	obj, err := r.lw.ListWithContext(ctx, metav1.ListOptions{ResourceVersion: "", Limit: limit})
	if err != nil {
		return nil, "", "", fmt.Errorf("list %s (limit %d): %w", r.opts.TypeDescription, limit, err)
	}
	acc, err := meta.ListAccessor(obj)
	if err != nil {
		return nil, "", "", fmt.Errorf("list %s (limit %d): %w: %T: %v", r.opts.TypeDescription, limit, ErrUnexpectedObject, obj, err)
	}
	if acc.GetResourceVersion() == "" {
		return nil, "", "", fmt.Errorf("list %s (limit %d): %w", r.opts.TypeDescription, limit, ErrNoResourceVersion)
	}
	return obj, acc.GetResourceVersion(), acc.GetContinue(), nil
}
