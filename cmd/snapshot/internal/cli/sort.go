package cli

import (
	"cmp"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strconv"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/jsonpath"

	"github.com/warmcache/warmcache/cmd/snapshot/internal/printers"
	"github.com/warmcache/warmcache/store/bolt"
	"github.com/warmcache/warmcache/store/bolt/inspect"
)

// sorter orders objects by a field, as kubectl get --sort-by does:
// numbers by value, strings in natural order (web-2 before web-10),
// objects without the field first, ties in key order.
type sorter struct {
	path string
	jp   *jsonpath.JSONPath
}

func newSorter(path string) (*sorter, error) {
	expr, err := printers.RelaxedJSONPath(path)
	if err != nil {
		return nil, err
	}
	jp := jsonpath.New("sort").AllowMissingKeys(true)
	if err := jp.Parse(expr); err != nil {
		return nil, fmt.Errorf("%w: %w", printers.ErrBadTemplate, err)
	}
	return &sorter{path: path, jp: jp}, nil
}

// sortEntry is what sorting holds per object: its key and sort value.
type sortEntry struct {
	key     string
	missing bool
	isNum   bool
	num     float64
	str     string
}

// value returns the sort entry of obj, filed under key.
func (s *sorter) value(key string, obj runtime.Object, info inspect.ResourceInfo) (sortEntry, error) {
	m, err := printers.Content(obj, kindOf(info.Identity))
	if err != nil {
		return sortEntry{}, err
	}
	e := sortEntry{key: key}
	results, err := s.jp.FindResults(m)
	if err != nil {
		return sortEntry{}, fmt.Errorf("--sort-by %q on %s: %w", s.path, key, err)
	}
	if len(results) == 0 || len(results[0]) == 0 {
		e.missing = true
		return e, nil
	}
	switch v := results[0][0].Interface().(type) {
	case int64:
		e.isNum, e.num = true, float64(v)
	case float64:
		e.isNum, e.num = true, v
	case int:
		e.isNum, e.num = true, float64(v)
	case string:
		e.str = v
	case bool:
		e.str = strconv.FormatBool(v)
	default:
		e.str = fmt.Sprint(v)
	}
	return e, nil
}

func compareEntries(a, b sortEntry) int {
	switch {
	case a.missing != b.missing:
		if a.missing {
			return -1
		}
		return 1
	case a.missing:
	case a.isNum && b.isNum:
		if c := cmp.Compare(a.num, b.num); c != 0 {
			return c
		}
	case a.isNum != b.isNum:
		if a.isNum {
			return -1
		}
		return 1
	default:
		if c := naturalCompare(a.str, b.str); c != 0 {
			return c
		}
	}
	return cmp.Compare(a.key, b.key)
}

// sorted reads seq once to hold each object's key and sort value, sorts
// them, then reads the objects again by key in order: memory holds a key
// and a value per object, never the objects.
func (s *sorter) sorted(st *bolt.Store, info inspect.ResourceInfo, seq iter.Seq2[runtime.Object, error], bad *[]badKey) iter.Seq2[runtime.Object, error] {
	return func(yield func(runtime.Object, error) bool) {
		var entries []sortEntry
		for obj, err := range seq {
			if err != nil {
				yield(nil, err)
				return
			}
			key, err := cache.MetaNamespaceKeyFunc(obj)
			if err != nil {
				yield(nil, fmt.Errorf("key of %T: %w", obj, err))
				return
			}
			e, err := s.value(key, obj, info)
			if err != nil {
				yield(nil, err)
				return
			}
			entries = append(entries, e)
		}
		slices.SortFunc(entries, compareEntries)
		for _, e := range entries {
			obj, exists, err := st.GetByKey(e.key)
			switch {
			case errors.Is(err, bolt.ErrCorrupt):
				*bad = append(*bad, badKey{info: info, key: e.key, err: err})
				continue
			case err != nil:
				yield(nil, fmt.Errorf("read %s %q: %w", displayName(info), e.key, err))
				return
			case !exists:
				continue
			}
			ro, ok := obj.(runtime.Object)
			if !ok {
				yield(nil, fmt.Errorf("%s: object %q is a %T", displayName(info), e.key, obj))
				return
			}
			if _, err := meta.Accessor(ro); err != nil {
				yield(nil, err)
				return
			}
			if !yield(ro, nil) {
				return
			}
		}
	}
}

// naturalCompare compares strings with runs of digits compared as
// numbers (kubectl's sortorder.NaturalLess).
func naturalCompare(a, b string) int {
	for a != "" && b != "" {
		da, db := digits(a), digits(b)
		if da > 0 && db > 0 {
			na, nb := trimZeros(a[:da]), trimZeros(b[:db])
			if c := cmp.Compare(len(na), len(nb)); c != 0 {
				return c
			}
			if c := cmp.Compare(na, nb); c != 0 {
				return c
			}
			if c := cmp.Compare(da, db); c != 0 {
				return c
			}
			a, b = a[da:], b[db:]
			continue
		}
		if a[0] != b[0] {
			return cmp.Compare(a[0], b[0])
		}
		a, b = a[1:], b[1:]
	}
	return cmp.Compare(len(a), len(b))
}

func digits(s string) int {
	n := 0
	for n < len(s) && s[n] >= '0' && s[n] <= '9' {
		n++
	}
	return n
}

func trimZeros(s string) string {
	for len(s) > 1 && s[0] == '0' {
		s = s[1:]
	}
	return s
}
