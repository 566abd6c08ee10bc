package jsondoc

import (
	"encoding/json"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/warmcache/warmcache/internal/podgen"
)

// podJSON is the JSON of podgen's pods, as the API server serves them.
func podJSON(b *testing.B, n int) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		out[i] = marshal(b, podgen.Pod(i))
	}
	return out
}

// BenchmarkYAML renders pods as YAML: this package, and sigs.k8s.io/yaml
// (kubectl's JSONToYAML) on the same JSON.
func BenchmarkYAML(b *testing.B) {
	pods := podJSON(b, 100)
	b.Run("jsondoc", func(b *testing.B) {
		var d Doc
		var out []byte
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			if err := d.Parse(pods[i%len(pods)]); err != nil {
				b.Fatal(err)
			}
			out = d.AppendYAML(out[:0], d.Root())
		}
	})
	b.Run("sigs.k8s.io-yaml", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			if _, err := yaml.JSONToYAML(pods[i%len(pods)]); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkJSON renders pods as indented JSON with sorted keys: this
// package, and encoding/json on the decoded value (kubectl's
// MarshalIndent of an unstructured object).
func BenchmarkJSON(b *testing.B) {
	pods := podJSON(b, 100)
	b.Run("jsondoc", func(b *testing.B) {
		var d Doc
		var out []byte
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			if err := d.Parse(pods[i%len(pods)]); err != nil {
				b.Fatal(err)
			}
			out = d.AppendJSON(out[:0], d.Root(), "")
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			var v map[string]interface{}
			if err := json.Unmarshal(pods[i%len(pods)], &v); err != nil {
				b.Fatal(err)
			}
			if _, err := json.MarshalIndent(v, "", "    "); err != nil {
				b.Fatal(err)
			}
		}
	})
}
