package cli

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"

	"github.com/warmcache/warmcache/cmd/snapshot/internal/printers"
	"github.com/warmcache/warmcache/cmd/snapshot/internal/progress"
	"github.com/warmcache/warmcache/store"
	"github.com/warmcache/warmcache/store/bolt"
	"github.com/warmcache/warmcache/store/bolt/inspect"
)

// metaFields are the field selector fields every resource supports.
var metaFields = []string{"metadata.name", "metadata.namespace"}

// podFields are the pod fields the API server supports in field selectors
// that a cache file can evaluate.
var podFields = []string{
	"spec.nodeName", "spec.restartPolicy", "spec.schedulerName", "spec.serviceAccountName",
	"status.phase", "status.podIP", "status.nominatedNodeName",
}

func isPods(id bolt.Identity) bool { return id.Group == "" && id.Resource == "pods" }

// supportedFields returns the field selector fields of a resource.
func supportedFields(id bolt.Identity) []string {
	if isPods(id) {
		return append(slices.Clone(metaFields), podFields...)
	}
	return metaFields
}

// filterOptions selects objects: by namespace, label selector and field
// selector, as kubectl get does.
type filterOptions struct {
	Namespace     string
	AllNamespaces bool
	LabelSelector string
	FieldSelector string

	// Set by complete and validate.
	namespaceGiven bool
	allByDefault   bool
	labels         labels.Selector
	fields         fields.Selector
}

// addFlags adds -n, -A, -l and --field-selector. allByDefault makes "all
// namespaces" the default instead of kubectl's "default" namespace.
func (f *filterOptions) addFlags(cmd *cobra.Command, allByDefault bool) {
	f.allByDefault = allByDefault
	fl := cmd.Flags()
	nsHelp := `only objects of this namespace (default: the namespace the resource was recorded for, else "default")`
	if allByDefault {
		nsHelp = "only objects of this namespace (default: all namespaces)"
	}
	fl.StringVarP(&f.Namespace, "namespace", "n", "", nsHelp)
	fl.BoolVarP(&f.AllNamespaces, "all-namespaces", "A", false, "objects of all namespaces (wins over -n)")
	fl.StringVarP(&f.LabelSelector, "selector", "l", "", "label selector, e.g. -l 'app=web,tier in (frontend,backend)'")
	fl.StringVar(&f.FieldSelector, "field-selector", "", "field selector, e.g. --field-selector metadata.name=web-0 (fields: "+
		strings.Join(metaFields, ", ")+"; for pods also "+strings.Join(podFields, ", ")+")")
}

func (f *filterOptions) complete(cmd *cobra.Command) {
	f.namespaceGiven = cmd.Flags().Changed("namespace")
}

// validate parses the selectors.
func (f *filterOptions) validate() error {
	// -A wins over -n, as in kubectl.
	var err error
	if f.labels, err = labels.Parse(f.LabelSelector); err != nil {
		return usageErrorf("bad label selector %q: %v", f.LabelSelector, err)
	}
	if f.fields, err = fields.ParseSelector(f.FieldSelector); err != nil {
		return usageErrorf("bad field selector %q: %v", f.FieldSelector, err)
	}
	return nil
}

// checkFields returns a usage error for a field selector on fields the
// resource does not support.
func (f *filterOptions) checkFields(info inspect.ResourceInfo) error {
	supported := supportedFields(info.Identity)
	for _, r := range f.fields.Requirements() {
		if !slices.Contains(supported, r.Field) {
			return usageErrorf("field selector %q: field %q is not supported for %s; supported fields: %s",
				f.FieldSelector, r.Field, displayName(info), strings.Join(supported, ", "))
		}
	}
	return nil
}

// scope returns the namespace to list ("" with all true for every
// namespace) for a resource recorded with info.
func (f *filterOptions) scope(info inspect.ResourceInfo) (ns string, all bool) {
	switch {
	case f.AllNamespaces:
		return "", true
	case f.namespaceGiven:
		return f.Namespace, false
	case info.Identity.Namespace != "":
		return info.Identity.Namespace, false
	case f.allByDefault:
		return "", true
	}
	return "default", false
}

// matches reports whether obj passes the selectors.
func (f *filterOptions) matches(obj runtime.Object) (bool, error) {
	a, err := meta.Accessor(obj)
	if err != nil {
		return false, fmt.Errorf("filter %T: %w", obj, err)
	}
	if !f.labels.Empty() && !f.labels.Matches(labels.Set(a.GetLabels())) {
		return false, nil
	}
	if f.fields.Empty() {
		return true, nil
	}
	return f.fields.Matches(fieldSet(obj, a)), nil
}

// fieldSet returns the selectable fields of obj.
func fieldSet(obj runtime.Object, a metav1Object) fields.Set {
	set := fields.Set{"metadata.name": a.GetName(), "metadata.namespace": a.GetNamespace()}
	switch o := obj.(type) {
	case *corev1.Pod:
		set["spec.nodeName"] = o.Spec.NodeName
		set["spec.restartPolicy"] = string(o.Spec.RestartPolicy)
		set["spec.schedulerName"] = o.Spec.SchedulerName
		set["spec.serviceAccountName"] = o.Spec.ServiceAccountName
		set["status.phase"] = string(o.Status.Phase)
		set["status.podIP"] = o.Status.PodIP
		set["status.nominatedNodeName"] = o.Status.NominatedNodeName
	case *unstructured.Unstructured:
		for _, f := range podFields {
			v, _, _ := unstructured.NestedString(o.Object, strings.Split(f, ".")...)
			set[f] = v
		}
	}
	return set
}

// metav1Object is what meta.Accessor returns.
type metav1Object = interface {
	GetName() string
	GetNamespace() string
}

// errStopScan ends a Scan early.
var errStopScan = errors.New("stop scan")

// firstObject returns the first stored object, or nil for an empty
// resource.
func firstObject(ctx context.Context, st *bolt.Store) (runtime.Object, error) {
	var first runtime.Object
	err := st.Scan(ctx, func(_ string, obj interface{}) error {
		first, _ = obj.(runtime.Object)
		return errStopScan
	})
	if err != nil && !errors.Is(err, errStopScan) {
		return nil, err
	}
	return first, nil
}

// isNamespaced tells from a stored object whether the resource is
// namespaced (the file does not record it). An empty resource counts as
// namespaced.
func isNamespaced(first runtime.Object) bool {
	if first == nil {
		return true
	}
	a, err := meta.Accessor(first)
	return err != nil || a.GetNamespace() != ""
}

// scanObjects returns the objects of st in namespace ns ("" for all) that
// pass f, in key order, streamed from Scan (or from ScanIndex on the
// recorded namespace index when there is one), one chunk in memory at a
// time. bar advances for every object read; count counts the objects
// yielded. An object that cannot be decoded is skipped and its key added
// to bad: the scan goes on after it, reading the remaining keys one by one.
func scanObjects(ctx context.Context, st *bolt.Store, info inspect.ResourceInfo, ns string, f *filterOptions, bar *progress.Bar, count *int, bad *[]badKey) iter.Seq2[runtime.Object, error] {
	return func(yield func(runtime.Object, error) bool) {
		stopped := false
		var last string
		seen := false
		fn := func(key string, obj interface{}) error {
			last, seen = key, true
			bar.Add(1)
			ro, ok := obj.(runtime.Object)
			if !ok {
				return fmt.Errorf("%s: object %q is a %T, not a runtime.Object", displayName(info), key, obj)
			}
			if ns != "" {
				// Check even when the index selected it: the
				// index is trusted by name only.
				a, err := meta.Accessor(ro)
				if err != nil || a.GetNamespace() != ns {
					return nil
				}
			}
			ok, err := f.matches(ro)
			if err != nil || !ok {
				return err
			}
			*count++
			if !yield(ro, nil) {
				stopped = true
				return errStopScan
			}
			return nil
		}
		var err error
		if usesNamespaceIndex(info, ns) {
			err = st.ScanIndex(ctx, cache.NamespaceIndex, ns, fn)
		} else {
			err = st.Scan(ctx, fn)
		}
		if err != nil && !stopped && errors.Is(err, bolt.ErrCorrupt) {
			err = scanRest(ctx, st, info, ns, last, seen, fn, bad)
		}
		if err != nil && !stopped && !errors.Is(err, errStopScan) {
			yield(nil, fmt.Errorf("read %s: %w", displayName(info), err))
		}
	}
}

// scanNames is scanObjects for a store opened with keyStore: the names of
// the objects of namespace ns ("" for all) that pass f, read from their
// keys and item entries (namespace and labels are recorded in clear:
// store.Selection pushdown), without decoding or decrypting an object.
// Each is yielded as keyObject of its key. f's field selector may name
// metadata.name and metadata.namespace only (see listsNamesOnly).
func scanNames(ctx context.Context, st *bolt.Store, info inspect.ResourceInfo, ns string, f *filterOptions, bar *progress.Bar, count *int) iter.Seq2[runtime.Object, error] {
	return func(yield func(runtime.Object, error) bool) {
		stopped := false
		err := st.Select(ctx, store.Selection{Namespace: ns, Labels: f.labels}, func(key string, _ interface{}) error {
			bar.Add(1)
			obj := keyObject(key)
			a, _ := meta.Accessor(obj)
			if !f.fields.Empty() && !f.fields.Matches(fieldSet(obj, a)) {
				return nil
			}
			*count++
			if !yield(obj, nil) {
				stopped = true
				return errStopScan
			}
			return nil
		})
		if err != nil && !stopped {
			yield(nil, fmt.Errorf("read %s: %w", displayName(info), err))
		}
	}
}

// listsNamesOnly reports whether a list of resource info prints names that
// need no decoding: -o name of a sealed resource, unsorted, selected by
// namespace, labels, metadata.name and metadata.namespace, all of which
// the file records in clear.
func listsNamesOnly(info inspect.ResourceInfo, output, sortBy string, f *filterOptions) bool {
	if output != printers.Name || sortBy != "" || !isSealed(info) {
		return false
	}
	for _, r := range f.fields.Requirements() {
		if !slices.Contains(metaFields, r.Field) {
			return false
		}
	}
	return true
}

// firstKeyObject is firstObject for a store opened with keyStore.
func firstKeyObject(ctx context.Context, st *bolt.Store) (runtime.Object, error) {
	var first runtime.Object
	err := st.Scan(ctx, func(key string, _ interface{}) error {
		first = keyObject(key)
		return errStopScan
	})
	if err != nil && !errors.Is(err, errStopScan) {
		return nil, err
	}
	return first, nil
}

// badKey is an object a command could not read: damaged, or sealed with
// a key --key-file does not hold.
type badKey struct {
	info inspect.ResourceInfo
	key  string
	err  error
}

// scanRest goes on with a scan that stopped at an object it could not
// decode: it reads, one by one, the keys after last (all of them when
// seen is false) and passes each readable object to fn, adding the others
// to bad. It holds the remaining keys, not their objects.
func scanRest(ctx context.Context, st *bolt.Store, info inspect.ResourceInfo, ns, last string, seen bool, fn func(string, interface{}) error, bad *[]badKey) error {
	var keys []string
	if usesNamespaceIndex(info, ns) {
		var err error
		if keys, err = st.IndexKeys(cache.NamespaceIndex, ns); err != nil {
			return err
		}
	} else {
		keys = st.ListKeys()
	}
	slices.Sort(keys)
	for _, key := range keys {
		if seen && key <= last {
			continue
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		obj, exists, err := st.GetByKey(key)
		switch {
		case errors.Is(err, bolt.ErrCorrupt):
			*bad = append(*bad, badKey{info: info, key: key, err: err})
			continue
		case err != nil:
			return err
		case !exists:
			continue
		}
		if err := fn(key, obj); err != nil {
			return err
		}
	}
	return nil
}

// unreadKeys lists on stderr the objects that could not be read, after
// what could: those sealed with a key --key-file does not hold, then the
// damaged ones. It returns an error matching bolt.ErrCorrupt (exit code
// 5) when any object is damaged, else one matching ErrKey (exit code 8)
// when any could not be decrypted, else nil.
func (f *snapshotFile) unreadKeys(env *Env, bad []badKey) error {
	var damaged, sealed []badKey
	for _, b := range bad {
		if isKeyError(b.err) {
			sealed = append(sealed, b)
		} else {
			damaged = append(damaged, b)
		}
	}
	var keyErr error
	if len(sealed) > 0 {
		fmt.Fprintf(env.Stderr, "%s could not be decrypted; every other object was printed:\n", plural(len(sealed), "object"))
		for _, b := range sealed {
			fmt.Fprintf(env.Stderr, "  %s %s\n", displayName(b.info), b.key)
		}
		first := sealed[0].info
		what := fmt.Sprintf("%s of %s", plural(len(sealed), "object"), displayName(first))
		keyErr = withHint(mark(ErrKey, "%s", f.keyChecks[f.recordedID(first).String()].describe(what)), keysHint)
	}
	if len(damaged) == 0 {
		return keyErr
	}
	if keyErr != nil {
		printError(env.Stderr, keyErr, "")
	}
	fmt.Fprintf(env.Stderr, "%s could not be read; every other object was printed:\n", plural(len(damaged), "object"))
	for _, b := range damaged {
		fmt.Fprintf(env.Stderr, "  %s %s\n", displayName(b.info), b.key)
	}
	return withHint(mark(bolt.ErrCorrupt, "%s is damaged: %s could not be read, first %s %q: %v", f.path, plural(len(damaged), "object"), displayName(damaged[0].info), damaged[0].key, damaged[0].err),
		"Run 'snapshot verify %s' for the whole picture.", shellQuote(f.path))
}

// usesNamespaceIndex reports whether scanObjects reads namespace ns through
// the recorded namespace index.
func usesNamespaceIndex(info inspect.ResourceInfo, ns string) bool {
	return ns != "" && slices.Contains(info.Indexes, cache.NamespaceIndex)
}

// progressTotal is the number of objects scanObjects reads, when known.
func progressTotal(info inspect.ResourceInfo, ns string) int64 {
	if usesNamespaceIndex(info, ns) {
		return 0 // only a namespace's objects: the bar counts
	}
	return info.Objects
}
