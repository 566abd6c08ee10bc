package crcache

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
)

// scope.go copies controller-runtime's (unexported) defaulting of
// cache.Options, cache.ByObject and cache.Config field by field. The
// tables below say what crcache does with every field of each; a field
// controller-runtime adds is one that the copy may miss, so the test
// fails, naming it, until it is handled and listed here.
//
// An entry "=Name" maps the field to the Config field Name (defaultsOf for
// Options, byObjectConfig for ByObject, defaulted for Config), which the
// test checks by value; any other entry says why the field needs no
// mapping.
var (
	optionsFields = map[string]string{
		"SyncPeriod":                   "=SyncPeriod",
		"DefaultLabelSelector":         "=LabelSelector",
		"DefaultFieldSelector":         "=FieldSelector",
		"DefaultTransform":             "=Transform",
		"DefaultUnsafeDisableDeepCopy": "=UnsafeDisableDeepCopy",
		"DefaultEnableWatchBookmarks":  "=EnableWatchBookmarks",
		"DefaultNamespaces":            "tagOptions defaults and tags each namespace's config",
		"ByObject":                     "tagOptions defaults and tags each entry, per namespace",
		"NewInformer":                  "refused with ErrUnsupported: crcache sets it",
		"HTTPClient":                   "defaulted by NewCache for controller-runtime; no part of a scope",
		"Scheme":                       "defaulted by NewCache for controller-runtime; no part of a scope",
		"Mapper":                       "defaulted by NewCache for controller-runtime; no part of a scope",
		"ReaderFailOnMissingInformer":  "how controller-runtime's reader answers; no part of a scope",
		"DefaultWatchErrorHandler":     "controller-runtime sets it on each informer (SetWatchErrorHandlerWithContext); no part of a scope",
	}
	byObjectFields = map[string]string{
		"Label":                 "=LabelSelector",
		"Field":                 "=FieldSelector",
		"Transform":             "=Transform",
		"UnsafeDisableDeepCopy": "=UnsafeDisableDeepCopy",
		"EnableWatchBookmarks":  "=EnableWatchBookmarks",
		"SyncPeriod":            "=SyncPeriod",
		"Namespaces":            "tagOptions defaults each namespace's config from the entry's, then the default namespaces', then the defaults",
	}
	configFields = map[string]string{
		"LabelSelector":         "=LabelSelector",
		"FieldSelector":         "=FieldSelector",
		"Transform":             "=Transform",
		"UnsafeDisableDeepCopy": "=UnsafeDisableDeepCopy",
		"EnableWatchBookmarks":  "=EnableWatchBookmarks",
		"SyncPeriod":            "=SyncPeriod",
	}
)

// TestEveryControllerRuntimeCacheFieldIsHandled fails for a field of
// cache.Options, cache.ByObject or cache.Config the tables do not list
// (controller-runtime added it: scope.go may have to default it) and for
// a listed field that is gone.
func TestEveryControllerRuntimeCacheFieldIsHandled(t *testing.T) {
	for _, tc := range []struct {
		typ    reflect.Type
		listed map[string]string
	}{
		{reflect.TypeFor[cache.Options](), optionsFields},
		{reflect.TypeFor[cache.ByObject](), byObjectFields},
		{reflect.TypeFor[cache.Config](), configFields},
	} {
		seen := map[string]bool{}
		for i := range tc.typ.NumField() {
			f := tc.typ.Field(i)
			seen[f.Name] = true
			if _, ok := tc.listed[f.Name]; !ok {
				t.Errorf("controller-runtime's %s has a field crcache does not know: %s (%s). Default it in scope.go as controller-runtime's cache.New does, or say why it needs nothing, and list it in scopefields_test.go",
					tc.typ, f.Name, f.Type)
			}
		}
		for name := range tc.listed {
			if !seen[name] {
				t.Errorf("controller-runtime's %s has no field %s any more: update scope.go and scopefields_test.go", tc.typ, name)
			}
		}
	}
}

// fullConfig returns a Config with every field set.
func fullConfig(label string) cache.Config {
	return cache.Config{
		LabelSelector:         labels.SelectorFromSet(labels.Set{"l": label}),
		FieldSelector:         fields.OneTermEqualSelector("metadata.name", label),
		Transform:             func(obj any) (any, error) { return obj, nil },
		UnsafeDisableDeepCopy: ptr.To(true),
		EnableWatchBookmarks:  ptr.To(false),
		SyncPeriod:            ptr.To(time.Duration(len(label)) * time.Minute),
	}
}

// TestDefaultingCopiesEveryField checks the mappings the tables name by
// value: defaultsOf and byObjectConfig carry every mapped field into the
// Config, and defaulted fills every unset Config field from its defaults
// and keeps every set one.
func TestDefaultingCopiesEveryField(t *testing.T) {
	want := fullConfig("default")
	o := cache.Options{
		SyncPeriod: want.SyncPeriod, DefaultLabelSelector: want.LabelSelector, DefaultFieldSelector: want.FieldSelector,
		DefaultTransform: want.Transform, DefaultUnsafeDisableDeepCopy: want.UnsafeDisableDeepCopy, DefaultEnableWatchBookmarks: want.EnableWatchBookmarks,
	}
	checkMapped(t, "defaultsOf", reflect.ValueOf(o), optionsFields, defaultsOf(&o))

	b := cache.ByObject{
		Namespaces: map[string]cache.Config{"a": {}}, Label: want.LabelSelector, Field: want.FieldSelector,
		Transform: want.Transform, UnsafeDisableDeepCopy: want.UnsafeDisableDeepCopy, EnableWatchBookmarks: want.EnableWatchBookmarks, SyncPeriod: want.SyncPeriod,
	}
	checkMapped(t, "byObjectConfig", reflect.ValueOf(b), byObjectFields, byObjectConfig(b))

	checkMapped(t, "defaulted (unset)", reflect.ValueOf(want), configFields, defaulted(cache.Config{}, want))
	own := fullConfig("own")
	checkMapped(t, "defaulted (set)", reflect.ValueOf(own), configFields, defaulted(own, want))
}

// checkMapped checks that every field of src its table maps ("=Name") is
// set and equal to got's field Name.
func checkMapped(t *testing.T, what string, src reflect.Value, table map[string]string, got cache.Config) {
	t.Helper()
	g := reflect.ValueOf(got)
	for name, how := range table {
		to, ok := strings.CutPrefix(how, "=")
		if !ok {
			continue
		}
		s, d := src.FieldByName(name), g.FieldByName(to)
		switch {
		case !s.IsValid() || !d.IsValid():
			t.Errorf("%s: %s -> %s: no such field", what, name, to)
		case s.IsZero():
			t.Errorf("%s: the test leaves %s %s unset: set it", what, src.Type(), name)
		case !sameValue(s, d):
			t.Errorf("%s: %s %s = %v, but the Config's %s = %v", what, src.Type(), name, s, to, d)
		}
	}
}

// sameValue compares two field values; functions by identity.
func sameValue(a, b reflect.Value) bool {
	if a.Kind() == reflect.Func {
		return b.Kind() == reflect.Func && a.Pointer() == b.Pointer()
	}
	return reflect.DeepEqual(a.Interface(), b.Interface())
}
