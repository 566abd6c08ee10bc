package measure

import (
	"bytes"
	"math"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestPercentile(t *testing.T) {
	ms := func(v ...int) []time.Duration {
		out := make([]time.Duration, len(v))
		for i, x := range v {
			out[i] = time.Duration(x) * time.Millisecond
		}
		return out
	}
	tests := []struct {
		name    string
		samples []time.Duration
		p       float64
		want    time.Duration
	}{
		{"empty", nil, 50, 0},
		{"one sample", ms(7), 99, 7 * time.Millisecond},
		{"median of unsorted odd", ms(5, 1, 3), 50, 3 * time.Millisecond},
		{"median of even takes lower rank", ms(4, 1, 3, 2), 50, 2 * time.Millisecond},
		{"p99 of 100", ms(seq(100)...), 99, 99 * time.Millisecond},
		{"p100 is the maximum", ms(seq(100)...), 100, 100 * time.Millisecond},
		{"p above 100 clamps", ms(1, 2), 150, 2 * time.Millisecond},
		{"p at or below 0 is the minimum", ms(9, 2, 5), 0, 2 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := NewLatencies(len(tt.samples))
			for _, d := range tt.samples {
				l.Add(d)
			}
			if got := l.Percentile(tt.p); got != tt.want {
				t.Errorf("Percentile(%v) = %v, want %v", tt.p, got, tt.want)
			}
			if l.Len() != len(tt.samples) {
				t.Errorf("Len = %d, want %d", l.Len(), len(tt.samples))
			}
		})
	}
}

// seq returns 1..n in reverse order, so that sorting matters.
func seq(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = n - i
	}
	return out
}

func TestPercentileAfterAdd(t *testing.T) {
	l := NewLatencies(0)
	l.Add(10)
	l.Add(20)
	if got := l.Percentile(100); got != 20 {
		t.Fatalf("p100 = %v, want 20ns", got)
	}
	l.Add(30)
	if got := l.Percentile(100); got != 30 {
		t.Errorf("p100 after a new sample = %v, want 30ns", got)
	}
}

func TestPerSecond(t *testing.T) {
	tests := []struct {
		name string
		n    int
		d    time.Duration
		want float64
	}{
		{"half a second", 1000, 500 * time.Millisecond, 2000},
		{"zero duration", 10, 0, 0},
		{"negative duration", 10, -time.Second, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := PerSecond(tt.n, tt.d); got != tt.want {
				t.Errorf("PerSecond(%d, %v) = %v, want %v", tt.n, tt.d, got, tt.want)
			}
		})
	}
}

func TestStopwatch(t *testing.T) {
	var s Stopwatch
	if s.Elapsed() != 0 {
		t.Fatalf("zero Stopwatch elapsed %v", s.Elapsed())
	}
	s.StopTimer() // stopping a stopped watch does nothing
	s.StartTimer()
	for s.Elapsed() == 0 {
	}
	s.StartTimer() // starting a running watch does not restart it
	s.StopTimer()
	first := s.Elapsed()
	if first <= 0 {
		t.Fatalf("elapsed after a run = %v", first)
	}
	if again := s.Elapsed(); again != first {
		t.Errorf("a stopped watch moved: %v then %v", first, again)
	}
	s.StartTimer()
	for s.Elapsed() == first {
	}
	s.StopTimer()
	if s.Elapsed() <= first {
		t.Errorf("second run did not accumulate: %v after %v", s.Elapsed(), first)
	}
	s.Reset()
	if s.Elapsed() != 0 {
		t.Errorf("elapsed after Reset = %v", s.Elapsed())
	}
}

var sink [][]byte

func TestSettledHeapSeesRetainedMemory(t *testing.T) {
	const size = 64 << 20
	before := SettledHeap()
	sink = append(sink, make([]byte, size))
	after := SettledHeap()
	if delta := int64(after) - int64(before); delta < size*9/10 {
		t.Errorf("heap grew by %d bytes while %d were retained", delta, size)
	}
	sink = nil
	if freed := SettledHeap(); int64(after)-int64(freed) < size*9/10 {
		t.Errorf("heap %d after dropping %d bytes, was %d", freed, size, after)
	}
}

func TestPeakSamplerSeesTransientMemory(t *testing.T) {
	const size = 64 << 20
	base := SettledHeap()
	p := StartPeak(time.Millisecond)
	sink = append(sink, make([]byte, size))
	// Wait until the sampling goroutine has taken a sample since.
	_, n0 := p.Peak()
	for _, n := p.Peak(); n == n0; _, n = p.Peak() {
		runtime.Gosched()
	}
	sink = nil
	SettledHeap()
	peak := p.Stop()
	if peak < base+size*9/10 {
		t.Errorf("peak %d, want at least %d above base %d", peak, size*9/10, base)
	}
	if _, n := p.Peak(); n < 2 {
		t.Errorf("%d samples, want at least the first and the last", n)
	}
	if again := p.Stop(); again != peak {
		t.Errorf("second Stop = %d, want %d", again, peak)
	}
	if now := HeapObjects(); now >= peak {
		t.Errorf("heap now %d is not below the transient peak %d", now, peak)
	}
}

func TestTable(t *testing.T) {
	tab := &Table{Title: "title", Columns: []string{"base", "a", "b"}}
	tab.Add("heap", &Target{Column: 2, AtMost: true, Value: 0.05, Ratio: true}, 1000, 900, 40)
	tab.Add("rate", &Target{Column: 2, Value: 30000}, 100000, 50000, 20000)
	tab.Add("missing", nil, 10, math.NaN(), 1234567)
	tab.Note("note %d", 1)
	var buf bytes.Buffer
	if err := tab.Write(&buf); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{
		"title\n",
		"a/base", "b/base",
		"b <= 0.05x base", "b >= 30,000",
		"1,234,567",
		"note 1\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	lines := strings.Split(out, "\n")
	find := func(prefix string) string {
		for _, l := range lines {
			if strings.HasPrefix(strings.TrimSpace(l), prefix) {
				return l
			}
		}
		t.Fatalf("no line starting with %q in:\n%s", prefix, out)
		return ""
	}
	if l := find("heap"); !strings.Contains(l, "0.04") || !strings.HasSuffix(strings.TrimSpace(l), "yes") {
		t.Errorf("heap row should show ratio 0.04 and meet its target: %q", l)
	}
	if l := find("rate"); !strings.HasSuffix(strings.TrimSpace(l), "no") {
		t.Errorf("rate row should miss its target: %q", l)
	}
	if l := find("missing"); !strings.Contains(l, " - ") {
		t.Errorf("NaN should print as -: %q", l)
	}
	rows := tab.Rows()
	if len(rows) != 3 || !rows[0].Met() || rows[1].Met() || rows[2].Met() {
		t.Errorf("Met of rows = %v %v %v, want true false false", rows[0].Met(), rows[1].Met(), rows[2].Met())
	}
}

func TestTargetMet(t *testing.T) {
	tests := []struct {
		name   string
		target Target
		v      float64
		want   bool
	}{
		{"at most, below", Target{AtMost: true, Value: 1}, 0.5, true},
		{"at most, equal", Target{AtMost: true, Value: 1}, 1, true},
		{"at most, above", Target{AtMost: true, Value: 1}, 1.5, false},
		{"at least, above", Target{Value: 1}, 2, true},
		{"at least, below", Target{Value: 1}, 0.9, false},
		{"NaN never meets", Target{AtMost: true, Value: 1}, math.NaN(), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.target.Met(tt.v); got != tt.want {
				t.Errorf("Met(%v) = %v, want %v", tt.v, got, tt.want)
			}
		})
	}
}

func TestRatio(t *testing.T) {
	if got := Ratio(1, 4); got != 0.25 {
		t.Errorf("Ratio(1, 4) = %v", got)
	}
	for _, c := range [][2]float64{{1, 0}, {math.NaN(), 1}, {1, math.NaN()}} {
		if got := Ratio(c[0], c[1]); !math.IsNaN(got) {
			t.Errorf("Ratio(%v, %v) = %v, want NaN", c[0], c[1], got)
		}
	}
}

func TestSpreadStrideVisitsEveryPod(t *testing.T) {
	for _, n := range []int{1, 2, 10, 50, 97, 100, 1000, 10000} {
		t.Run(strconv.Itoa(n), func(t *testing.T) {
			s := SpreadStride(n)
			seen := make([]bool, n)
			for k := range n {
				i := (k * s) % n
				if seen[i] {
					t.Fatalf("n=%d stride %d: pod %d visited twice in %d updates", n, s, i, n)
				}
				seen[i] = true
			}
		})
	}
}

func TestStopwatchCountsCPU(t *testing.T) {
	if _, ok := ProcessCPU(); !ok {
		t.Skip("the process's CPU time is unknown on this system")
	}
	var s Stopwatch
	s.StartTimer()
	// Spin until the process has used measurable CPU time.
	for s.CPU() < 5*time.Millisecond {
	}
	s.StopTimer()
	cpu := s.CPU()
	if cpu < 5*time.Millisecond {
		t.Fatalf("CPU %v after spinning for 5ms of CPU", cpu)
	}
	// Stopped: CPU used now is not the stopwatch's.
	for start, _ := ProcessCPU(); ; {
		if now, _ := ProcessCPU(); now-start >= 5*time.Millisecond {
			break
		}
	}
	if again := s.CPU(); again != cpu {
		t.Errorf("a stopped stopwatch's CPU moved from %v to %v", cpu, again)
	}
	if s.Elapsed() <= 0 {
		t.Errorf("elapsed %v", s.Elapsed())
	}
}

func TestReadGCCountsCyclesAndAllocations(t *testing.T) {
	const size = 8 << 20
	before := ReadGC()
	sink = append(sink, make([]byte, size))
	runtime.GC()
	runtime.GC()
	d := ReadGC().Sub(before)
	sink = nil
	if d.Cycles < 2 {
		t.Errorf("%d cycles counted across two forced collections", d.Cycles)
	}
	if d.Allocs < size {
		t.Errorf("%d bytes allocated counted, want at least %d", d.Allocs, size)
	}
	if d.CPU <= 0 {
		t.Errorf("two collections took %v of the collector's CPU", d.CPU)
	}
}

func TestSetColumnsAndValues(t *testing.T) {
	type result struct {
		impl string
		v    float64
	}
	name := func(r result) string { return r.impl }
	for _, tc := range []struct {
		name    string
		results []result
		want    int
	}{
		{"target after the baseline", []result{{"client-go", 1}, {"memory", 2}, {"bolt", 3}}, 2},
		{"target is the baseline", []result{{"bolt", 1}, {"memory", 2}}, -1},
		{"no target", []result{{"client-go", 1}}, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tab := &Table{Columns: []string{"stale"}}
			if got := SetColumns(tab, tc.results, name, "bolt"); got != tc.want {
				t.Errorf("SetColumns = %d, want %d", got, tc.want)
			}
			if len(tab.Columns) != len(tc.results) || tab.Columns[0] != tc.results[0].impl {
				t.Errorf("columns %q, want one per result", tab.Columns)
			}
			vals := Values(tc.results, func(r result) float64 { return r.v })
			for i, v := range vals {
				if v != float64(i+1) {
					t.Errorf("Values[%d] = %v, want %d", i, v, i+1)
				}
			}
		})
	}
}
