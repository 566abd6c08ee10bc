package factory

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/sharding"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/watchlist"
	"k8s.io/klog/v2"
)

// A server without the ShardedListAndWatch feature gate ignores
// ListOptions.ShardSelector and answers with the whole collection. Every
// replica of a sharded controller would then cache and reconcile every
// object. A server with the gate echoes the selector it applied in the
// list's ListMeta.ShardInfo (kube-apiserver 1.36: the selector parsed and
// printed again, SelectionPredicate.SetShardInfoOnList), so each list
// response of a sharded ListerWatcher is checked: no ShardInfo, or the
// ShardInfo of another selector, fails the list with ErrShardIgnored.
//
// The reflector passes that error to the WatchErrorHandler and retries on
// its backoff; the list failed before the reflector opened a replace (or,
// on a later page, the replace is aborted), so nothing of it reaches the
// store or the handlers and the informer does not sync.
//
// A WatchList stream carries no list metadata: kube-apiserver 1.36 marks
// its end with a bookmark that holds only a resourceVersion and the
// k8s.io/initial-events-end annotation, nothing of the shard. The factory
// therefore relists a sharded informer with paginated LIST (the
// reflector's WatchListOff), so that every relist is checked.
//
// A watch carries no ShardInfo either, and may be opened on another
// apiserver than the list (one restarted without the gate, or one of
// several behind a load balancer): each of its events is checked against
// the shard's ranges instead (shardEventFilter).

// shardRangeTerm matches one shardRange(field, 'start', 'end') of a
// shard selector, as kube-apiserver 1.36 accepts it (k8s.io/apiserver
// pkg/sharding.Parse): the field is object.metadata.uid or
// object.metadata.namespace, the bounds are 0x and 16 lowercase hex
// digits, or 0x10000000000000000 (2^64) for the end.
var shardRangeTerm = regexp.MustCompile(`^shardRange\(\s*(object\.metadata\.(?:uid|namespace))\s*,\s*(?:'(0x[0-9a-f]{16,17})'|"(0x[0-9a-f]{16,17})")\s*,\s*(?:'(0x[0-9a-f]{16,17})'|"(0x[0-9a-f]{16,17})")\s*\)$`)

// parseShard returns the ranges of shard selector s: shardRange terms
// joined with ||, all on one field, as kube-apiserver parses them. ok is
// false for any other form (parenthesised terms, for example), which
// parseShard does not read.
func parseShard(s string) (_ []sharding.ShardRangeRequirement, ok bool) {
	var reqs []sharding.ShardRangeRequirement
	for _, term := range strings.Split(s, "||") {
		m := shardRangeTerm.FindStringSubmatch(strings.TrimSpace(term))
		if m == nil {
			return nil, false
		}
		r := sharding.ShardRangeRequirement{Key: m[1], Start: m[2] + m[3], End: m[4] + m[5]}
		if !validBound(r.Start) || !validBound(r.End) || !sharding.HexLess(r.Start, r.End) {
			return nil, false
		}
		if len(reqs) > 0 && reqs[0].Key != r.Key {
			return nil, false
		}
		reqs = append(reqs, r)
	}
	return reqs, len(reqs) > 0
}

// validBound reports a bound of 16 hex digits, or 2^64.
func validBound(b string) bool {
	return len(b) == 18 || b == "0x10000000000000000"
}

// sameShard reports whether the selector a server echoed is the one sent:
// the same ranges when both parse, else the same text but for spaces.
func sameShard(sent, echoed string) bool {
	a, okA := parseShard(sent)
	b, okB := parseShard(echoed)
	if okA && okB {
		return slices.Equal(a, b)
	}
	return strings.Join(strings.Fields(sent), "") == strings.Join(strings.Fields(echoed), "")
}

// shardInfoOf returns the ShardInfo selector of a list response: ListMeta's
// for typed and metadata-only lists, metadata.shardInfo.selector for
// unstructured ones. ok is false when the list has none.
func shardInfoOf(list runtime.Object) (selector string, ok bool) {
	switch l := list.(type) {
	case *unstructured.UnstructuredList:
		s, found, err := unstructured.NestedString(l.Object, "metadata", "shardInfo", "selector")
		return s, found && err == nil
	case metav1.ShardedListInterface:
		if si := l.GetShardInfo(); si != nil {
			return si.Selector, true
		}
		return "", false
	}
	// Typed lists embed ListMeta; reach it through the list accessor.
	lm, err := meta.ListAccessor(list)
	if err != nil {
		return "", false
	}
	if sl, ok := lm.(metav1.ShardedListInterface); ok {
		if si := sl.GetShardInfo(); si != nil {
			return si.Selector, true
		}
	}
	return "", false
}

// checkShardList returns an error wrapping ErrShardIgnored when list, the
// answer to a list sent with shard selector shard, does not say it is that
// shard (ListMeta.ShardInfo missing or another selector). A nil list (the
// list failed) and an empty shard pass.
func checkShardList(shard string, list runtime.Object) error {
	if shard == "" || list == nil {
		return nil
	}
	got, ok := shardInfoOf(list)
	switch {
	case !ok:
		return fmt.Errorf("%w: sent shard selector %q, the list response has no ListMeta.ShardInfo: the server returned the whole collection", ErrShardIgnored, shard)
	case !sameShard(shard, got):
		return fmt.Errorf("%w: sent shard selector %q, the list response is shard %q", ErrShardIgnored, shard, got)
	}
	return nil
}

// checkShardItems returns an error wrapping ErrShardIgnored when an item
// of list lies outside the ranges reqs of shard: the server did not apply
// the selector. It is the check of metadata-only lists, which
// kube-apiserver 1.36 sends without ShardInfo even when it applied the
// selector (its PartialObjectMetadataList conversion copies only the
// resourceVersion, continue token and remaining count of ListMeta).
func checkShardItems(shard string, reqs []sharding.ShardRangeRequirement, list runtime.Object) error {
	sel := sharding.NewSelector(reqs...)
	return meta.EachListItem(list, func(obj runtime.Object) error {
		in, err := sel.Matches(obj)
		if err != nil {
			return fmt.Errorf("%w: sent shard selector %q: %w", ErrShardIgnored, shard, err)
		}
		if !in {
			m, _ := meta.Accessor(obj)
			return fmt.Errorf("%w: sent shard selector %q, the list response holds %s/%s (uid %s), which is outside it: the server returned the whole collection",
				ErrShardIgnored, shard, m.GetNamespace(), m.GetName(), m.GetUID())
		}
		return nil
	})
}

// checkedListWatch is a ListerWatcher of this package that sends and
// checks the shard of its scope itself ("" for none); InformerFor wraps any
// other ListerWatcher of a sharded scope in shardChecked, and refuses one
// of these built for another shard.
type checkedListWatch struct {
	*cache.ListWatch
	shard string
	// noWatchList is set for a client that cannot stream a list
	// (client-go's fake clients): the reflector then lists with LIST, as
	// client-go's informers do on it.
	noWatchList bool
}

func (c checkedListWatch) checksShard() string { return c.shard }

// IsWatchListSemanticsUnSupported tells the reflector whether the client
// cannot stream a list (watchlist.DoesClientNotSupportWatchListSemantics).
func (c checkedListWatch) IsWatchListSemanticsUnSupported() bool { return c.noWatchList }

// ownShard returns lw, which sends shard itself (tweak), as a
// ListerWatcher of this package: with its answers checked (shardChecked)
// when shard is set, and in any case known to InformerFor as built for
// shard, so that it is refused for a scope of another shard
// (checkShardScope).
func ownShard(lw *cache.ListWatch, shard string) cache.ListerWatcher {
	if shard == "" {
		return checkedListWatch{ListWatch: lw}
	}
	return shardChecked(lw, shard, false)
}

// withoutWatchList returns lw marked as unable to stream a list when
// client cannot (client-go's fake clients; see checkedListWatch).
func withoutWatchList(lw cache.ListerWatcher, client any) cache.ListerWatcher {
	c, ok := lw.(checkedListWatch)
	if !ok || !watchlist.DoesClientNotSupportWatchListSemantics(client) {
		return lw
	}
	c.noWatchList = true
	return c
}

// shardCheckerOf returns the shard lw sends and checks itself, when it is
// a ListerWatcher of this package.
func shardCheckerOf(lw cache.ListerWatcher) (shard string, ok bool) {
	c, ok := lw.(interface{ checksShard() string })
	if !ok {
		return "", false
	}
	return c.checksShard(), true
}

// shardChecked returns lw, whose lists and watches are sent with shard,
// with each list answer checked (checkShardList; for a metadata-only
// informer, checkMetadataShard) and the events of objects outside the
// shard dropped from its watches (shardEventFilter). lw must send the
// selector itself.
func shardChecked(lw cache.ListerWatcher, shard string, metadataOnly bool) cache.ListerWatcher {
	if own, ok := shardCheckerOf(lw); (ok && own == shard) || shard == "" {
		return lw
	}
	ranges, parsed := parseShard(shard)
	check := func(obj runtime.Object) error {
		if l, ok := obj.(*metav1.PartialObjectMetadataList); ok && metadataOnly {
			return checkMetadataShard(shard, ranges, parsed, l)
		}
		return checkShardList(shard, obj)
	}
	lwc := cache.ToListerWatcherWithContext(lw)
	events := newShardEventFilter(shard)
	return checkedListWatch{shard: shard, noWatchList: watchlist.DoesClientNotSupportWatchListSemantics(lw), ListWatch: &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			obj, err := lwc.ListWithContext(ctx, o)
			if err != nil {
				return obj, err
			}
			if err := check(obj); err != nil {
				return nil, err
			}
			return obj, nil
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return events.watch(ctx)(lwc.WatchWithContext(ctx, o))
		},
	}}
}

// shardEventFilter drops the watch events of objects outside a shard.
//
// A server without the ShardedListAndWatch gate ignores the shard
// selector of a watch as of a list, and a watch says nothing of the shard
// it sends. An informer that synced through an apiserver with the gate
// may watch through one without it (restarted without the gate, or
// another behind the same load balancer); that watch sends every shard's
// changes. Each ADDED, MODIFIED and DELETED event is therefore tested
// against the shard's ranges, hashing the object's uid or namespace (read
// through meta.Accessor: typed, unstructured and metadata-only objects
// alike) with the sharding package's selector, as the server does. An
// event outside the shard is dropped: its object is not the shard's, and
// since a uid or a namespace never changes, the informer never held it (a
// DELETED of it is dropped harmlessly). The first one a watch drops is
// logged, once per watch, with ErrShardIgnored. BOOKMARK and ERROR events,
// and events whose object has no metadata, pass untouched.
//
// A selector that is not shardRange terms joined with || (parseShard)
// cannot be tested that way; InformerFor refuses such a selector, and the
// events of a ListerWatcher built with one outside InformerFor pass
// unchecked.
type shardEventFilter struct {
	shard string
	sel   sharding.Selector // nil when there is nothing to check
}

func newShardEventFilter(shard string) *shardEventFilter {
	reqs, ok := parseShard(shard)
	if !ok {
		return &shardEventFilter{shard: shard}
	}
	return &shardEventFilter{shard: shard, sel: sharding.NewSelector(reqs...)}
}

// filter returns the filter of the events of one watch opened with ctx:
// true for an event to pass on, false for one to drop. It logs to ctx's
// logger (klog.FromContext). It must be called from one goroutine.
func (f *shardEventFilter) filter(ctx context.Context) func(*watch.Event) bool {
	if f.sel == nil {
		return func(*watch.Event) bool { return true }
	}
	logger := klog.FromContext(ctx)
	logged := false
	return func(e *watch.Event) bool {
		switch e.Type {
		case watch.Added, watch.Modified, watch.Deleted:
		default:
			return true
		}
		in, err := f.sel.Matches(e.Object)
		if err != nil || in {
			return true
		}
		if !logged {
			logged = true
			m, _ := meta.Accessor(e.Object)
			err := fmt.Errorf("%w: sent shard selector %q, the watch sent %s of %s/%s (uid %s), which is outside it: the server watched the whole collection",
				ErrShardIgnored, f.shard, e.Type, m.GetNamespace(), m.GetName(), m.GetUID())
			logger.Error(err, "Dropping the events of objects outside the shard from this watch", "shard", f.shard)
		}
		return false
	}
}

// watch returns a function that passes on a watch opened with ctx with
// its events filtered (filter), or w itself when there is nothing to
// check, and an error as it is.
func (f *shardEventFilter) watch(ctx context.Context) func(watch.Interface, error) (watch.Interface, error) {
	return func(w watch.Interface, err error) (watch.Interface, error) {
		if err != nil || w == nil || f.sel == nil {
			return w, err
		}
		return newFilterWatch(w, f.filter(ctx)), nil
	}
}

// checkShardScope refuses a shard selector the factory cannot check
// (parseShard: shardRange terms joined with ||; the server may accept
// others, and echoes them in a form that could not be compared), and one
// of this package's ListerWatchers built for another shard than the
// scope's (it would send and check that one).
func checkShardScope(lw cache.ListerWatcher, shard string) error {
	if shard != "" {
		if _, ok := parseShard(shard); !ok {
			return fmt.Errorf("shard selector %q is not shardRange(field, '0x<16 hex digits>', '0x<16 hex digits>') terms joined with ||, the form whose answers the factory can check", shard)
		}
	}
	if own, ok := shardCheckerOf(lw); ok && own != shard {
		return fmt.Errorf("the ListerWatcher was built for shard %q, the scope's is %q: build it with the same scope", own, shard)
	}
	return nil
}
