package reflector

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/warmcache/warmcache/internal/fakesource"
)

// TestWatchListPagesGrow checks that a WatchList's pages grow with the
// stream, each at most an eighth of the objects pushed before it (at
// least minGrowingPage) and at most ListPageSize, so that a resource of a
// few pages is never pushed in pages of ListPageSize from its start; and
// that a paginated LIST keeps the server's pages of ListPageSize.
func TestWatchListPagesGrow(t *testing.T) {
	const n = 5000
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("p%05d", i)
	}
	cases := []struct {
		name   string
		policy WatchListPolicy
		// want returns the largest page allowed after pushed objects.
		want func(pushed int) int
	}{
		{"WatchList", WatchListAuto, func(pushed int) int { return min(DefaultListPageSize, max(minGrowingPage, pushed/growthDivisor)) }},
		{"LIST", WatchListOff, func(int) int { return DefaultListPageSize }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			src := newSource(t, fakesource.Options{}, names...)
			sink := newRecorder()
			var mu sync.Mutex
			var pages []int
			sink.hook = func(_ context.Context, call string) error {
				if strings.HasPrefix(call, "ReplacePage ") {
					mu.Lock()
					pages = append(pages, strings.Count(call, ",")+1)
					mu.Unlock()
				}
				return nil
			}
			run(t, src, sink, Options{UseWatchList: tc.policy})
			sink.waitCall(t, fmt.Sprintf("EndReplace %d", n+1))
			mu.Lock()
			defer mu.Unlock()
			pushed := 0
			for i, p := range pages {
				last := i == len(pages)-1
				if want := tc.want(pushed); p > want || !last && p != want {
					t.Fatalf("page %d of %v: %d objects after %d pushed, want %d", i, pages, p, pushed, want)
				}
				pushed += p
			}
			if pushed != n {
				t.Fatalf("pages %v hold %d objects, want %d", pages, pushed, n)
			}
			if max := pages[len(pages)-2]; max != DefaultListPageSize {
				t.Fatalf("pages %v never reach %d", pages, DefaultListPageSize)
			}
			sink.checkModel(t, src)
		})
	}
}
