package demo

import (
	"strings"
	"testing"

	"github.com/warmcache/warmcache/internal/democtl"
)

func TestWriteTable(t *testing.T) {
	cold := RunResult{WatchLists: 1, Stats: democtl.Stats{
		SyncedSeconds: 8.523, BytesReceived: 160 << 20, PeakHeapBytes: 80 << 20, SteadyHeapBytes: 12 << 20,
		Events:  democtl.EventCounts{InitialAdds: 20000},
		Relists: 1,
	}}
	warm := RunResult{AtSync: 3, Stats: democtl.Stats{
		SyncedSeconds: 0.9, BytesReceived: 1536 << 10, PeakHeapBytes: 30 << 20, SteadyHeapBytes: 11 << 20,
		Events: democtl.EventCounts{InitialAdds: 20000, Adds: 50, Updates: 150, Deletes: 50},
	}}
	var b strings.Builder
	if err := WriteTable(&b, cold, warm, 95<<20); err != nil {
		t.Fatal(err)
	}
	got := b.String()
	for _, want := range []string{
		"cold start   warm start",
		"time to synced   8.52s   900ms",
		"handler's view at synced   = the server's   3 pods differ",
		"WatchList streams (apiserver)   1   0",
		"bytes received   160.0 MiB   1.5 MiB",
		"events delivered   20000   20250",
		"adds / updates / deletes   0 / 0 / 0   50 / 150 / 50",
		"lists of every pod   1   0",
		"cache file   95.0 MiB",
	} {
		if !strings.Contains(squeeze(got), want) {
			t.Errorf("table lacks %q:\n%s", want, got)
		}
	}
}

// squeeze collapses runs of spaces to three, the table's column gap.
func squeeze(s string) string {
	var b strings.Builder
	spaces := 0
	for _, r := range s {
		if r == ' ' {
			spaces++
			continue
		}
		if spaces > 0 {
			if spaces > 1 {
				b.WriteString("   ")
			} else {
				b.WriteByte(' ')
			}
			spaces = 0
		}
		b.WriteRune(r)
	}
	return b.String()
}

func TestBytes(t *testing.T) {
	for _, tc := range []struct {
		n    int64
		want string
	}{{0, "0 B"}, {1023, "1023 B"}, {1024, "1.0 KiB"}, {3 << 20, "3.0 MiB"}, {5 << 30, "5.0 GiB"}} {
		if got := bytes(tc.n); got != tc.want {
			t.Errorf("bytes(%d) = %q, want %q", tc.n, got, tc.want)
		}
	}
}
