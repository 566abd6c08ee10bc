package machine

import (
	"strings"
	"testing"
)

func TestParseLoadavg(t *testing.T) {
	tests := []struct {
		name        string
		in          string
		l1, l5, l15 float64
		ok          bool
	}{
		{"linux", "7.07 9.99 10.01 3/812 12345\n", 7.07, 9.99, 10.01, true},
		{"too short", "1.0 2.0", 0, 0, 0, false},
		{"not numbers", "a b c d e", 0, 0, 0, false},
		{"empty", "", 0, 0, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l1, l5, l15, ok := parseLoadavg(tt.in)
			if ok != tt.ok || l1 != tt.l1 || l5 != tt.l5 || l15 != tt.l15 {
				t.Errorf("parseLoadavg(%q) = %v %v %v %v, want %v %v %v %v", tt.in, l1, l5, l15, ok, tt.l1, tt.l5, tt.l15, tt.ok)
			}
		})
	}
}

func TestBusyAndLabel(t *testing.T) {
	tests := []struct {
		name string
		info Info
		busy bool
	}{
		{"quiet", Info{NumCPU: 2, HasLoad: true, Load1: 0.3}, false},
		{"half the CPUs", Info{NumCPU: 2, HasLoad: true, Load1: 1}, true},
		{"overloaded", Info{NumCPU: 2, HasLoad: true, Load1: 12}, true},
		{"unknown load", Info{NumCPU: 2, Load1: 12}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.info.Busy(); got != tt.busy {
				t.Errorf("Busy() = %v, want %v", got, tt.busy)
			}
			label := tt.info.Label()
			if tt.busy != strings.Contains(label, "UNDER LOAD") {
				t.Errorf("Label() = %q with busy %v", label, tt.busy)
			}
		})
	}
}

func TestReadDescribesThisProcess(t *testing.T) {
	i := Read()
	if i.NumCPU <= 0 || i.GOMAXPROCS <= 0 || !strings.HasPrefix(i.GoVersion, "go") {
		t.Errorf("Read() = %+v", i)
	}
	if !strings.Contains(i.String(), i.GOOS+"/"+i.GOARCH) {
		t.Errorf("String() = %q lacks the platform", i.String())
	}
}

func TestRunLabel(t *testing.T) {
	quiet := Info{NumCPU: 2, HasLoad: true, Load1: 0.4}
	tests := []struct {
		name          string
		before, after Info
		busy          bool
	}{
		{"quiet before, only this run after", quiet, Info{NumCPU: 2, HasLoad: true, Load1: 2.4}, false},
		{"busy before", Info{NumCPU: 2, HasLoad: true, Load1: 1.5}, quiet, true},
		{"others started during the run", quiet, Info{NumCPU: 2, HasLoad: true, Load1: 5.4}, true},
		{"unknown load", Info{NumCPU: 2}, Info{NumCPU: 2}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			label := RunLabel(tt.before, tt.after)
			if tt.busy != strings.Contains(label, "UNDER LOAD") {
				t.Errorf("RunLabel = %q, want busy %v", label, tt.busy)
			}
		})
	}
}
