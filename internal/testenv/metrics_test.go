package testenv

import (
	"errors"
	"maps"
	"math"
	"testing"
)

func TestParseSample(t *testing.T) {
	tests := []struct {
		line   string
		name   string
		labels map[string]string
		value  float64
	}{
		{`up 1`, "up", map[string]string{}, 1},
		{`up 1 1700000000000`, "up", map[string]string{}, 1},
		{`a_total{verb="LIST",resource="pods"} 42`, "a_total", map[string]string{"verb": "LIST", "resource": "pods"}, 42},
		{`a{x="1",} 2.5e3`, "a", map[string]string{"x": "1"}, 2500},
		{`a{ x = "1" , y="2"} -1`, "a", map[string]string{"x": "1", "y": "2"}, -1},
		{`a{msg="say \"hi\"\\n\nnext, {x}"} +Inf`, "a", map[string]string{"msg": "say \"hi\"\\n\nnext, {x}"}, math.Inf(1)},
		{`a{} 0`, "a", map[string]string{}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.line, func(t *testing.T) {
			s, err := parseSample(tt.line)
			if err != nil {
				t.Fatal(err)
			}
			if s.name != tt.name || !maps.Equal(s.labels, tt.labels) || s.value != tt.value {
				t.Errorf("parseSample = %+v; want %s %v %v", s, tt.name, tt.labels, tt.value)
			}
		})
	}
}

func TestParseSampleErrors(t *testing.T) {
	for _, line := range []string{
		``, `{x="1"} 1`, `up`, `up one`, `up 1 2 3`,
		`a{x=1} 1`, `a{x="1} 1`, `a{x="1"`, `a{x="1" y="2"} 1`, `a{x="\q"} 1`, `a{x="\`, `a{="1"} 1`,
	} {
		t.Run(line, func(t *testing.T) {
			if s, err := parseSample(line); !errors.Is(err, errSyntax) {
				t.Errorf("parseSample(%q) = %+v, %v; want errSyntax", line, s, err)
			}
		})
	}
}

func TestSumSamples(t *testing.T) {
	const text = `# HELP apiserver_request_total Counter of apiserver requests.
# TYPE apiserver_request_total counter
apiserver_request_total{code="200",resource="configmaps",verb="LIST",version="v1"} 3
apiserver_request_total{code="410",resource="configmaps",verb="LIST",version="v1"} 2
apiserver_request_total{code="200",resource="configmaps",verb="WATCH",version="v1"} 7
apiserver_request_total{code="200",resource="pods",verb="LIST",version="v1"} 11
apiserver_request_total_other{resource="configmaps",verb="LIST"} 100
apiserver_request_totals 100
`
	tests := []struct {
		name  string
		match map[string]string
		want  float64
	}{
		{"all", nil, 23},
		{"list configmaps", map[string]string{"verb": "LIST", "resource": "configmaps"}, 5},
		{"watch configmaps", map[string]string{"verb": "WATCH", "resource": "configmaps"}, 7},
		{"absent label value", map[string]string{"resource": "secrets"}, 0},
		{"absent label", map[string]string{"group": "apps"}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := sumSamples(text, "apiserver_request_total", tt.match)
			if err != nil || got != tt.want {
				t.Errorf("sumSamples = %v, %v; want %v", got, err, tt.want)
			}
		})
	}
	if _, err := sumSamples("apiserver_request_total{verb=\"LIST\" 1\n", "apiserver_request_total", nil); !errors.Is(err, errSyntax) {
		t.Errorf("malformed line: error %v, want errSyntax", err)
	}
}

func FuzzParseSample(f *testing.F) {
	for _, s := range []string{`up 1`, `a{x="1",y="\"\\\n"} 2 3`, `a{x="1"`, `a{} NaN`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		s, err := parseSample(line)
		if err != nil {
			if !errors.Is(err, errSyntax) {
				t.Fatalf("parseSample(%q) error %v does not wrap errSyntax", line, err)
			}
			return
		}
		if s.name == "" || s.labels == nil {
			t.Fatalf("parseSample(%q) = %+v without error", line, s)
		}
	})
}
