package cli

import (
	"cmp"
	"errors"
	"fmt"
	"iter"
	goruntime "runtime"
	"slices"
	"strconv"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
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
	// steps is the path as plain steps (parseFieldPath), evaluated on
	// typed objects without their content; nil if it is not one.
	steps []fieldStep
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
	s := &sorter{path: path, jp: jp}
	if steps, ok := parseFieldPath(expr); ok && steps[0].name != "apiVersion" && steps[0].name != "kind" {
		// apiVersion and kind are set from the resource where the object
		// lacks them: the content knows, the typed object does not.
		s.steps = steps
	}
	return s, nil
}

// sortEntry is what sorting holds per object: its key and sort value.
type sortEntry struct {
	key     string
	missing bool
	isNum   bool
	num     float64
	str     string
}

// value returns the sort entry of obj, filed under key: from the typed
// object when the path is plain steps it can follow (evalFieldPath), else
// from the object's content with client-go's jsonpath.
func (s *sorter) value(key string, obj runtime.Object, info inspect.ResourceInfo) (sortEntry, error) {
	if _, isU := obj.(*unstructured.Unstructured); s.steps != nil && !isU {
		if v, found, ok := evalFieldPath(obj, s.steps); ok {
			if !found {
				return sortEntry{key: key, missing: true}, nil
			}
			return entryOf(key, v), nil
		}
	}
	var content interface{}
	if u, ok := obj.(*unstructured.Unstructured); ok && u.GetAPIVersion() != "" && u.GetKind() != "" {
		content = u.Object // read, not changed: no copy
	} else {
		m, err := printers.Content(obj, kindOf(info.Identity))
		if err != nil {
			return sortEntry{}, err
		}
		content = m
	}
	results, err := s.jp.FindResults(content)
	if err != nil {
		return sortEntry{}, fmt.Errorf("--sort-by %q on %s: %w", s.path, key, err)
	}
	if len(results) == 0 || len(results[0]) == 0 {
		return sortEntry{key: key, missing: true}, nil
	}
	return entryOf(key, results[0][0].Interface()), nil
}

// entryOf is the sort entry of value v: numbers by value, other values by
// their text.
func entryOf(key string, v interface{}) sortEntry {
	e := sortEntry{key: key}
	switch v := v.(type) {
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
	return e
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

// entry returns the sort entry of obj: its key and sort value.
func (s *sorter) entry(obj runtime.Object, info inspect.ResourceInfo) (sortEntry, error) {
	key, err := cache.MetaNamespaceKeyFunc(obj)
	if err != nil {
		return sortEntry{}, fmt.Errorf("key of %T: %w", obj, err)
	}
	return s.value(key, obj, info)
}

// sortedRow is what sortedRows holds per object: its sort entry (key and
// sort value) and its rendered row.
type sortedRow struct {
	entry sortEntry
	row   printers.Row
}

// sortedRows reads seq once, and for each object renders its row with
// render and reads its sort value in the same pass; then it sorts the
// rows and yields them in order. It holds per object its row, key and
// sort value, never the object: each object is decoded once.
func (s *sorter) sortedRows(info inspect.ResourceInfo, seq iter.Seq2[runtime.Object, error], render func(runtime.Object) (printers.Row, error)) iter.Seq2[printers.Row, error] {
	return func(yield func(printers.Row, error) bool) {
		var rows []sortedRow
		for obj, err := range seq {
			if err != nil {
				yield(printers.Row{}, err)
				return
			}
			e, err := s.entry(obj, info)
			if err != nil {
				yield(printers.Row{}, err)
				return
			}
			r, err := render(obj)
			if err != nil {
				yield(printers.Row{}, err)
				return
			}
			rows = append(rows, sortedRow{entry: e, row: r})
		}
		slices.SortFunc(rows, func(a, b sortedRow) int { return compareEntries(a.entry, b.entry) })
		for i := range rows {
			if !yield(rows[i].row, nil) {
				return
			}
			rows[i] = sortedRow{} // printed: let it go
		}
	}
}

// sorted reads seq once to hold each object's key and sort value, sorts
// them, then reads the objects again by key in order: memory holds a key
// and a value per object, never the objects. It serves the printers whose
// output is not one row per object (json, yaml, jsonpath, go-template);
// the others print sortedRows.
func (s *sorter) sorted(st *bolt.Store, info inspect.ResourceInfo, seq iter.Seq2[runtime.Object, error], bad *[]badKey) iter.Seq2[runtime.Object, error] {
	return func(yield func(runtime.Object, error) bool) {
		var entries []sortEntry
		for obj, err := range seq {
			if err != nil {
				yield(nil, err)
				return
			}
			e, err := s.entry(obj, info)
			if err != nil {
				yield(nil, err)
				return
			}
			entries = append(entries, e)
		}
		slices.SortFunc(entries, compareEntries)
		for f := range fetchOrdered(st, entries) {
			switch {
			case errors.Is(f.err, bolt.ErrCorrupt):
				*bad = append(*bad, badKey{info: info, key: f.key, err: f.err})
				continue
			case f.err != nil:
				yield(nil, fmt.Errorf("read %s %q: %w", displayName(info), f.key, f.err))
				return
			case !f.exists:
				continue
			}
			ro, ok := f.obj.(runtime.Object)
			if !ok {
				yield(nil, fmt.Errorf("%s: object %q is a %T", displayName(info), f.key, f.obj))
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

// fetched is an object read by key.
type fetched struct {
	key    string
	obj    interface{}
	exists bool
	err    error
}

// fetchChunk is the number of objects fetchOrdered reads at a time.
const fetchChunk = 256

// fetchOrdered reads the objects of entries' keys with GetByKey, a chunk
// at a time on GOMAXPROCS goroutines, the next chunk while the caller
// takes the current one, and yields them in entries' order. It holds at
// most two chunks of objects. When the caller stops early it waits for
// the reads under way before it returns.
func fetchOrdered(st *bolt.Store, entries []sortEntry) iter.Seq[fetched] {
	return func(yield func(fetched) bool) {
		chunks := make(chan []fetched, 1)
		stop := make(chan struct{})
		go func() {
			defer close(chunks)
			workers := goruntime.GOMAXPROCS(0)
			for start := 0; start < len(entries); start += fetchChunk {
				part := entries[start:min(start+fetchChunk, len(entries))]
				out := make([]fetched, len(part))
				var wg sync.WaitGroup
				for w := range min(workers, len(part)) {
					wg.Go(func() {
						for i := w; i < len(part); i += workers {
							obj, exists, err := st.GetByKey(part[i].key)
							out[i] = fetched{key: part[i].key, obj: obj, exists: exists, err: err}
						}
					})
				}
				wg.Wait()
				select {
				case chunks <- out:
				case <-stop:
					return
				}
			}
		}()
		defer func() {
			close(stop)
			for range chunks { // the producer's last chunk, if any
			}
		}()
		for chunk := range chunks {
			for _, f := range chunk {
				if !yield(f) {
					return
				}
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
