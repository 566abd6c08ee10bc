package jsondoc

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/warmcache/warmcache/internal/podgen"
)

// kubectlYAML is what kubectl -o yaml prints for the object whose JSON is
// raw: sigs.k8s.io/yaml.Marshal of the unstructured object, which is
// JSONToYAML of its JSON. ok is false when kubectl fails: go-yaml's
// reader refuses some characters JSON allows raw (DEL, C1 controls,
// U+FFFE), and a raw NEL can put a document marker at the start of a
// line.
func kubectlYAML(t testing.TB, raw []byte) (y []byte, ok bool) {
	t.Helper()
	y, err := yaml.JSONToYAML(raw)
	if err != nil {
		return nil, false
	}
	return y, true
}

// kubectlJSON is what kubectl -o json prints for the object whose JSON is
// raw: json.MarshalIndent of the decoded value, four spaces.
func kubectlJSON(t testing.TB, raw []byte, prefix string) []byte {
	t.Helper()
	var v interface{}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("decode: %v", err)
	}
	out, err := json.MarshalIndent(v, prefix, "    ")
	if err != nil {
		t.Fatalf("MarshalIndent: %v", err)
	}
	return out
}

// check renders raw both ways and compares with kubectl's renderings.
func check(t testing.TB, raw []byte) {
	t.Helper()
	var d Doc
	if err := d.Parse(raw); err != nil {
		t.Fatalf("Parse(%s): %v", raw, err)
	}
	got := d.AppendYAML(nil, d.Root())
	// kubectl's YAML folds a raw NEL (U+0085, which encoding/json does
	// not escape) with the spaces around it into one space: it reads the
	// JSON as YAML. The CLI keeps the character.
	nel := bytes.Contains(raw, []byte("\u0085"))
	if want, ok := kubectlYAML(t, raw); ok && !nel && !bytes.Equal(got, want) {
		t.Fatalf("YAML of %s differs\n--- got:\n%s\n--- want:\n%s", raw, got, want)
	} else if !ok || nel {
		// Where kubectl fails, the YAML must still read back as the JSON.
		var fromYAML, fromJSON interface{}
		if err := yaml.Unmarshal(got, &fromYAML); err != nil {
			t.Fatalf("YAML of %s does not parse: %v\n%s", raw, err, got)
		}
		if err := json.Unmarshal(raw, &fromJSON); err != nil {
			t.Fatal(err)
		}
		if a, b := marshal(t, fromYAML), marshal(t, fromJSON); !bytes.Equal(a, b) {
			t.Fatalf("YAML of %s reads back as %s", raw, a)
		}
	}
	if got, want := d.AppendJSON(nil, d.Root(), ""), kubectlJSON(t, raw, ""); !bytes.Equal(got, want) {
		t.Fatalf("JSON of %s differs\n--- got:\n%s\n--- want:\n%s", raw, got, want)
	}
}

// marshal is json.Marshal, failing the test on error.
func marshal(t testing.TB, v interface{}) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestPodsAsKubectl renders podgen's pods, and pods changed to hold what
// a cluster's objects hold (long strings with spaces, several lines,
// quoting, non-ASCII), as kubectl does.
func TestPodsAsKubectl(t *testing.T) {
	for i := range 200 {
		p := podgen.Pod(i)
		switch i % 5 {
		case 1:
			p.Spec.Containers[0].Args = []string{"--config=/etc/app/config.yaml --log-level debug --listen 0.0.0.0:8080 --upstream http://backend.default.svc.cluster.local:9090/api/v1?x=1&y=2"}
			p.Annotations["description"] = strings.Repeat("a fairly long sentence with spaces, ", 8)
		case 2:
			p.Annotations["script"] = "#!/bin/sh\nset -e\n  echo 'hi: there'\n\n"
			p.Annotations["kubectl.kubernetes.io/last-applied-configuration"] = `{"apiVersion":"v1","kind":"Pod","metadata":{"annotations":{},"name":"x"}}` + "\n"
			p.Labels["yes"] = "no"
		case 3:
			p.Annotations["ünïcödé"] = "日本語のテキスト with spaces and a \t tab"
			p.Annotations["trailing"] = "space "
			p.Annotations["1.5"] = "0x1F"
			p.Annotations[strings.Repeat("example.com/", 12)+"long-key"] = "v"
		case 4:
			p.Status.Message = "- starts like a sequence item: and holds # a comment"
			p.Status.Reason = "2026-01-02"
			p.Spec.Hostname = "true"
		}
		check(t, marshal(t, p))
	}
}

// TestScalars renders strings at the edges of go-yaml's styles, as values
// and as keys, at several depths (the 80-column folding depends on the
// indentation).
func TestScalars(t *testing.T) {
	long := strings.Repeat("word ", 30)
	for _, s := range []string{
		"", " ", "a", "yes", "No", "on", "~", "null", "Null", "<<", ".5", ".inf", "-.inf", "+1", "-", "--", "---", "...", "-a", "- a",
		"1", "01", "0x1F", "0o17", "0b101", "-0b101", "1_000", "1e3", "1E3", "1.", "1.5e-3", "+.5", "12:30", "1:2:3.5", "190:20:30",
		"2026-01-02", "2026-1-2", "2026-01-02T03:04:05Z", "2026-02-29T03:04:05Z", "2024-02-29T03:04:05Z", "2026-13-02T03:04:05Z",
		"2026-01-02T24:04:05Z", "2026-01-02T03:04:60Z", "2026-01-02t03:04:05Z", "0000-01-01T00:00:00Z", "2026-01-02 03:04:05", "2026-13-45", "20260102",
		"a: b", "a:b", "a:", "a:b:", "a::b", "http://x:80/y", "a #b", "a#b", "#a", "&a", "*a", "!a", "|a", ">a", "'a", `"a`, "%a", "@a", "`a", "?a", "? a", ":a", ": a",
		"[a]", "{a}", "a,b", "a, b", "a\tb", "\ta", "a\t", "a\n", "\na", "a\nb", "a\n\n", "a \nb", "a\n b", "\n", "\n\n", " a\nb",
		"a\rb", "a\u0085b", "a\u2028b", "a\u00a0b", "\u00a0", "\ufeffa", "a\ufeff", "\x00", "a\x07", "\x1b[0m", "\u007f", "é", "日本",
		"\U0001F600 emoji", "\uFFFE", "it's", "'", `\`, `a\b`, long, long + "\n" + long, "'" + long, " " + long, long + "#x",
		strings.Repeat("x", 200), strings.Repeat("ab ", 60) + "\n", strings.Repeat("é ", 60),
	} {
		for _, v := range []interface{}{
			map[string]interface{}{"k": s},
			map[string]interface{}{s: "v"},
			map[string]interface{}{"a": map[string]interface{}{"b": []interface{}{s, map[string]interface{}{s: s}}}},
			[]interface{}{[]interface{}{s}},
		} {
			check(t, marshal(t, v))
		}
	}
}

// TestNumbersAndShapes renders numbers, booleans, null and empty or
// nested containers.
func TestNumbersAndShapes(t *testing.T) {
	for _, raw := range []string{
		`{"a":0,"b":-1,"c":9223372036854775807,"d":-9223372036854775808,"e":18446744073709551615,"f":1.5,"g":1e+21,"h":1e-7,"i":-0,"j":123456789012345678901234567890}`,
		`{"t":true,"f":false,"n":null,"o":{},"l":[],"ll":[[]],"lo":[{}],"oo":{"x":{}}}`,
		`[1,"a",[2,[3,{"b":[]}]],{"c":{"d":[{"e":null}]}}]`,
		`{"a10":1,"a9":2,"a":3,"B":4,"b":5,"1":6,"10":7,"2":8,"-":9,"_a":10,"a01":11,"a1":12,"a_1":13,"é":14,"z":15}`,
		`{"x":"\u003c\u003e\u0026","y":"\u2028\u2029","z":"😀"}`,
		`"just a string"`, `42`, `null`, `[]`, `{}`,
	} {
		t.Run(raw, func(t *testing.T) { check(t, []byte(raw)) })
	}
}

// TestList streams a List and compares it with kubectl's, which renders
// the whole List at once.
func TestList(t *testing.T) {
	for _, n := range []int{0, 1, 3} {
		var items []interface{}
		var d Doc
		got, l := BeginYAMLList(nil)
		for i := range n {
			p := podgen.Pod(i)
			p.Annotations["description"] = strings.Repeat("a fairly long sentence with spaces, ", 4)
			p.Annotations["script"] = "line one\nline two\n"
			if i == 1 {
				// The item ends with a literal kept with its last
				// line break: the next starts on that line.
				p.Status.Message = "last\n\n"
				p.Status.Reason, p.Status.Phase = "", ""
				p.Status.PodIP, p.Status.PodIPs, p.Status.QOSClass, p.Status.StartTime = "", nil, "", nil
			}
			raw := marshal(t, p)
			var m map[string]interface{}
			if err := json.Unmarshal(raw, &m); err != nil {
				t.Fatal(err)
			}
			items = append(items, m)
			if err := d.Parse(raw); err != nil {
				t.Fatal(err)
			}
			item, needBreak := d.AppendListItem(nil, d.Root())
			if needBreak == (i == 1) {
				t.Fatalf("item %d: needBreak %v\n%s", i, needBreak, item)
			}
			got = l.Append(got, item, needBreak)
		}
		got = l.End(got)
		if items == nil {
			items = []interface{}{}
		}
		list := map[string]interface{}{"apiVersion": "v1", "kind": "List", "items": items, "metadata": map[string]interface{}{"resourceVersion": ""}}
		if want, _ := kubectlYAML(t, marshal(t, list)); !bytes.Equal(got, want) {
			t.Errorf("List of %d differs\n--- got:\n%s\n--- want:\n%s", n, got, want)
		}
	}
}

// TestEdit checks Delete, SetString and Lookup.
func TestEdit(t *testing.T) {
	p := podgen.Pod(1)
	p.TypeMeta = metav1.TypeMeta{}
	var d Doc
	if err := d.Parse(marshal(t, p)); err != nil {
		t.Fatal(err)
	}
	md, ok := d.Get(d.Root(), "metadata")
	if !ok || !d.Delete(md, "managedFields") || d.Delete(md, "managedFields") {
		t.Fatal("delete managedFields")
	}
	d.SetString(d.Root(), "kind", "Pod")
	d.SetString(d.Root(), "apiVersion", "v1")
	d.SetString(md, "name", "renamed")
	if v, ok := d.Lookup(d.Root(), "metadata", "name"); !ok {
		t.Fatal("no metadata.name")
	} else if s, _ := d.String(v); s != "renamed" {
		t.Fatalf("name %q", s)
	}
	p.ManagedFields = nil
	p.Name = "renamed"
	p.TypeMeta = metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"}
	want, _ := kubectlYAML(t, marshal(t, p))
	if got := d.AppendYAML(nil, d.Root()); !bytes.Equal(got, want) {
		t.Fatalf("edited pod differs\n--- got:\n%s\n--- want:\n%s", got, want)
	}
}

// TestParseErrors checks that bad JSON is an error, not a panic.
func TestParseErrors(t *testing.T) {
	var d Doc
	for _, bad := range []string{"", "{", `{"a"}`, `{"a":}`, "[1,]", `"\x01"`, `"\u12"`, "01", "1.", "-", "tru", "{} x", `{"a":1,}`} {
		if err := d.Parse([]byte(bad)); err == nil {
			t.Errorf("Parse(%q) succeeded", bad)
		}
	}
}

// FuzzYAMLString compares the renderings of a string as a value and a key
// at two depths.
func FuzzYAMLString(f *testing.F) {
	for _, s := range []string{"a", "yes", "a: b", "1e3", "2026-01-02", "a\nb\n", " x", strings.Repeat("w ", 50), "\ufeff", "é"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		check(t, marshal(t, map[string]interface{}{"k": s, s: []interface{}{s}, "deep": map[string]interface{}{"x": map[string]interface{}{s: s}}}))
	})
}

// FuzzJSON compares the renderings of any JSON value (as encoding/json
// writes it, as the CLI's input always is).
func FuzzJSON(f *testing.F) {
	f.Add([]byte(`{"a":[1,2,{"b":"c"}],"d":null,"e":1.5,"f":"g h"}`))
	f.Add(marshal(f, podgen.Pod(0)))
	f.Add(marshal(f, &corev1.ConfigMap{Data: map[string]string{"a.yaml": "x: 1\ny: [2]\n", "b": " lead"}}))
	f.Fuzz(func(t *testing.T, data []byte) {
		var v interface{}
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		if err := dec.Decode(&v); err != nil || dec.More() {
			return
		}
		raw, err := json.Marshal(v)
		if err != nil {
			return
		}
		// kubectl's unstructured objects hold int64 and float64: only
		// numbers encoding/json writes for those.
		if !canonicalNumbers(v) {
			return
		}
		check(t, raw)
	})
}

// canonicalNumbers reports whether every number of v is written back
// unchanged by encoding/json from an int64 or a float64.
func canonicalNumbers(v interface{}) bool {
	switch v := v.(type) {
	case json.Number:
		if i, err := v.Int64(); err == nil {
			return fmt.Sprint(i) == v.String()
		}
		f, err := v.Float64()
		if err != nil {
			return false
		}
		b, err := json.Marshal(f)
		return err == nil && string(b) == v.String()
	case []interface{}:
		for _, e := range v {
			if !canonicalNumbers(e) {
				return false
			}
		}
	case map[string]interface{}:
		for _, e := range v {
			if !canonicalNumbers(e) {
				return false
			}
		}
	}
	return true
}

// FuzzKeyLess compares keyLess with go-yaml's order, through a mapping of
// the two keys.
func FuzzKeyLess(f *testing.F) {
	for _, p := range [][2]string{{"a", "b"}, {"a1", "a10"}, {"a01", "a1"}, {"ab", "a"}, {"a_b", "a-b"}, {"é", "e"}, {"x9y", "x10y"}, {"", "a"}} {
		f.Add(p[0], p[1])
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		if a == b || !utf8.ValidString(a) || !utf8.ValidString(b) {
			return
		}
		check(t, marshal(t, map[string]interface{}{a: 1, b: 2}))
	})
}

// TestRFC3339Seconds compares the shortcut with time.Parse on the format
// go-yaml tries first.
func TestRFC3339Seconds(t *testing.T) {
	for _, s := range []string{"2026-01-02T03:04:05Z", "2026-02-29T03:04:05Z", "2024-02-29T03:04:05Z", "2026-04-31T00:00:00Z",
		"2026-13-02T03:04:05Z", "2026-00-02T03:04:05Z", "2026-01-00T03:04:05Z", "2026-01-02T24:04:05Z", "2026-01-02T03:04:60Z",
		"2026-01-02T23:59:59Z", "0000-01-01T00:00:00Z", "9999-12-31T23:59:59Z", "2026-01-02T03:04:5xZ"} {
		_, err := time.Parse(timestampFormats[0], s)
		if got := isRFC3339Seconds([]byte(s)); got && err != nil {
			t.Errorf("isRFC3339Seconds(%q) = true, time.Parse: %v", s, err)
		}
	}
}
