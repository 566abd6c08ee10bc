package fakesource

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metainternalversionvalidation "k8s.io/apimachinery/pkg/apis/meta/internalversion/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
)

// optionsScheme converts metav1.ListOptions to the internal form
// apimachinery validates, as kube-apiserver does.
var optionsScheme = runtime.NewScheme()

func init() {
	utilruntime.Must(metainternalversion.AddToScheme(optionsScheme))
}

// Endpoint serves LIST and WATCH for one kind, in one namespace or all.
// It is safe for concurrent use.
type Endpoint struct {
	src       *Source
	gvk       schema.GroupVersionKind
	namespace string
}

var (
	_ cache.ListerWatcher            = (*Endpoint)(nil)
	_ cache.ListerWatcherWithContext = (*Endpoint)(nil)
)

// Endpoint returns the list/watch endpoint of a kind; namespace "" serves
// every namespace.
func (s *Source) Endpoint(gvk schema.GroupVersionKind, namespace string) *Endpoint {
	return &Endpoint{src: s, gvk: gvk, namespace: namespace}
}

// IsWatchListSemanticsUnSupported reports whether the source runs in
// WatchListClientUnsupported mode; client-go's
// watchlist.DoesClientNotSupportWatchListSemantics consults it.
func (e *Endpoint) IsWatchListSemanticsUnSupported() bool {
	e.src.mu.Lock()
	defer e.src.mu.Unlock()
	return e.src.mode == WatchListClientUnsupported
}

// List implements cache.Lister.
func (e *Endpoint) List(opts metav1.ListOptions) (runtime.Object, error) {
	return e.ListWithContext(context.Background(), opts)
}

// Watch implements cache.Watcher.
func (e *Endpoint) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	return e.WatchWithContext(context.Background(), opts)
}

// filter selects the objects a request asked for.
type filter struct {
	namespace string
	label     labels.Selector
	field     fields.Selector
}

func (f filter) matches(obj runtime.Object) bool {
	acc, err := meta.Accessor(obj)
	if err != nil {
		return false
	}
	if f.namespace != "" && acc.GetNamespace() != f.namespace {
		return false
	}
	if !f.label.Matches(labels.Set(acc.GetLabels())) {
		return false
	}
	return f.field.Matches(fields.Set{"metadata.name": acc.GetName(), "metadata.namespace": acc.GetNamespace()})
}

// validate checks opts as kube-apiserver does and returns the filter they
// select. watchListEnabled is false when the WatchList gate is off.
func (e *Endpoint) validate(opts metav1.ListOptions, watchListEnabled bool) (filter, error) {
	internal := &metainternalversion.ListOptions{}
	if err := optionsScheme.Convert(&opts, internal, nil); err != nil {
		return filter{}, apierrors.NewBadRequest(err.Error())
	}
	if errs := metainternalversionvalidation.ValidateListOptions(internal, watchListEnabled); len(errs) > 0 {
		return filter{}, apierrors.NewInvalid(schema.GroupKind{Group: metav1.GroupName, Kind: "ListOptions"}, "", errs)
	}
	f := filter{namespace: e.namespace, label: labels.Everything(), field: fields.Everything()}
	if internal.LabelSelector != nil {
		f.label = internal.LabelSelector
	}
	if internal.FieldSelector != nil {
		for _, r := range internal.FieldSelector.Requirements() {
			if r.Field != "metadata.name" && r.Field != "metadata.namespace" {
				return filter{}, apierrors.NewBadRequest(fmt.Sprintf("field label not supported: %s", r.Field))
			}
		}
		f.field = internal.FieldSelector
	}
	return f, nil
}

// parseRV parses a non-empty resourceVersion as kube-apiserver does.
func parseRV(rv string) (int64, error) {
	n, err := strconv.ParseInt(rv, 10, 64)
	if err != nil || n < 0 {
		return 0, apierrors.NewBadRequest(fmt.Sprintf("invalid resource version %q", rv))
	}
	return n, nil
}

// requestedRVLocked parses the resourceVersion a list or watch asks for,
// refusing one the source has not reached, as the apiserver does.
func (s *Source) requestedRVLocked(v string) (int64, error) {
	rv, err := parseRV(v)
	if err != nil {
		return 0, err
	}
	if rv > s.rv {
		return 0, TooLargeResourceVersion(rv, s.rv)
	}
	return rv, nil
}

// continueToken is the decoded form of a continue parameter.
type continueToken struct {
	RV        int64  `json:"rv"`
	Kind      string `json:"kind"`
	Namespace string `json:"ns"`
	// StartNS and StartName are the key of the last object returned.
	StartNS   string `json:"startNS"`
	StartName string `json:"start"`
}

func encodeContinue(t continueToken) string {
	b, _ := json.Marshal(t) // a struct of strings and ints always marshals
	return base64.RawURLEncoding.EncodeToString(b)
}

func (e *Endpoint) decodeContinue(s string) (continueToken, error) {
	var t continueToken
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err == nil {
		err = json.Unmarshal(b, &t)
	}
	if err != nil || t.Kind != e.gvk.String() || t.Namespace != e.namespace || t.RV <= 0 {
		return t, apierrors.NewBadRequest(fmt.Sprintf("continue key is not valid: %q", s))
	}
	return t, nil
}

// continueExpiredMessage is etcd3 storage's message for a compacted
// continue token.
const continueExpiredMessage = "The provided continue parameter is too old to display a consistent list result. " +
	"You can start a new list without the continue parameter."

// ListWithContext implements cache.ListerWithContext with kube-apiserver's
// resourceVersion, resourceVersionMatch, limit and continue semantics (see
// the package documentation).
func (e *Endpoint) ListWithContext(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	s := e.src
	s.mu.Lock()
	defer s.mu.Unlock()
	req := Request{Verb: verbList, GVK: e.gvk, Namespace: e.namespace, Options: opts}
	obj, err := e.listLocked(ctx, opts)
	req.Err = err
	s.recordLocked(req, false)
	return obj, err
}

func (e *Endpoint) listLocked(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	s := e.src
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if f, ok := s.takeFaultLocked(verbList); ok {
		return nil, f.Err
	}
	opts.Watch = false
	flt, err := e.validate(opts, true)
	if err != nil {
		return nil, err
	}
	limit := opts.Limit
	var at int64
	var start *objKey
	switch {
	case opts.Continue != "":
		if opts.ResourceVersion != "" {
			return nil, apierrors.NewBadRequest("specifying resource version is not allowed when using continue")
		}
		tok, err := e.decodeContinue(opts.Continue)
		if err != nil {
			return nil, err
		}
		if tok.RV < s.compacted {
			return nil, apierrors.NewResourceExpired(continueExpiredMessage)
		}
		at, start = tok.RV, &objKey{gvk: e.gvk, namespace: tok.StartNS, name: tok.StartName}
	case opts.ResourceVersion == "":
		at = s.rv
	case opts.ResourceVersion == "0" && opts.ResourceVersionMatch != metav1.ResourceVersionMatchExact:
		at = s.rv
		if !s.disableCache {
			limit = 0
		}
	default:
		rv, err := s.requestedRVLocked(opts.ResourceVersion)
		if err != nil {
			return nil, err
		}
		exact := opts.ResourceVersionMatch == metav1.ResourceVersionMatchExact ||
			(opts.ResourceVersionMatch == "" && opts.Limit > 0)
		if !exact {
			at = s.rv
			break
		}
		if rv < s.compacted {
			return nil, apierrors.NewResourceExpired(fmt.Sprintf("too old resource version: %d (%d)", rv, s.compacted))
		}
		at = rv
	}
	return e.pageLocked(at, start, limit, flt)
}

// pageLocked builds the list of the objects at RV at whose key follows
// start (nil: from the first key), at most limit of them (0: all).
func (e *Endpoint) pageLocked(at int64, start *objKey, limit int64, flt filter) (runtime.Object, error) {
	s := e.src
	keys := s.sortedKeysLocked(e.gvk)
	i := 0
	if start != nil {
		i = sort.Search(len(keys), func(i int) bool { return start.less(keys[i]) })
	}
	var items []runtime.Object
	var last objKey
	next := ""
	for ; i < len(keys); i++ {
		obj := s.versionAtLocked(keys[i], at)
		if obj == nil || !flt.matches(obj) {
			continue
		}
		if limit > 0 && int64(len(items)) == limit {
			next = encodeContinue(continueToken{RV: at, Kind: e.gvk.String(), Namespace: e.namespace,
				StartNS: last.namespace, StartName: last.name})
			break
		}
		items = append(items, obj.DeepCopyObject())
		last = keys[i]
	}
	list := s.newList(e.gvk)
	if err := meta.SetList(list, items); err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	acc, err := meta.ListAccessor(list)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	acc.SetResourceVersion(strconv.FormatInt(at, 10))
	acc.SetContinue(next)
	return list, nil
}
