package layout

import (
	"bytes"
	"maps"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"

	"github.com/warmcache/warmcache/internal/testkit"
)

func TestSelectPart(t *testing.T) {
	many := map[string]string{"z": "1", "a": "2", "m": "", "app.kubernetes.io/name": "x"}
	for _, tc := range []struct {
		name    string
		key     string
		obj     interface{}
		derived bool
		ns      string
		labels  map[string]string
	}{
		{"namespaced", "ns/a", testkit.Pod("a", "", testkit.Labels{"app": "x"}), true, "ns", map[string]string{"app": "x"}},
		{"cluster-scoped", "a", testkit.Pod("a", "", testkit.Namespace("")), true, "", nil},
		{"the empty key", "", testkit.Pod("", "", testkit.Namespace(""), testkit.Labels{}), true, "", nil},
		{"key not naming the namespace", "a.ns", testkit.Pod("a", "", testkit.Labels(many)), false, "ns", many},
		{"slash in a cluster-scoped key", "x/y", testkit.Pod("x/y", "", testkit.Namespace("")), false, "", nil},
		{"no metadata", "k", cache.DeletedFinalStateUnknown{Key: "k"}, false, "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := AppendSelectPart([]byte{0xff}, tc.key, tc.obj)[1:]
			if again := AppendSelectPart(nil, tc.key, tc.obj); !bytes.Equal(b, again) {
				t.Fatalf("encoding is not deterministic: %x then %x", b, again)
			}
			p, rest, err := ParseSelectPart(append(bytes.Clone(b), 0x81, 0xa1, 'x'))
			if err != nil || !bytes.Equal(rest, []byte{0x81, 0xa1, 'x'}) {
				t.Fatalf("ParseSelectPart(%x) = rest %x, %v", b, rest, err)
			}
			_, isPod := tc.obj.(*corev1.Pod)
			if p.HasMeta != isPod || p.Derived != tc.derived {
				t.Fatalf("parsed %+v, want metadata %t, derived namespace %t", p, isPod, tc.derived)
			}
			if got := string(p.NamespaceOf([]byte(tc.key))); isPod && got != tc.ns {
				t.Errorf("namespace %q, want %q", got, tc.ns)
			}
			if got := p.Labels.Map(); !maps.Equal(got, tc.labels) || p.Labels.Len() != len(tc.labels) {
				t.Errorf("labels %v (%d), want %v", got, p.Labels.Len(), tc.labels)
			}
			for k, v := range tc.labels {
				if got, ok := p.Labels.Lookup(k); !ok || got != v || !p.Labels.Has(k) || p.Labels.Get(k) != v {
					t.Errorf("Lookup(%q) = %q, %t; want %q", k, got, ok, v)
				}
			}
			if p.Labels.Has("absent") || p.Labels.Get("absent") != "" {
				t.Error("an absent label is reported present")
			}
			if len(tc.labels) > 0 && !labels.SelectorFromSet(tc.labels).Matches(&p.Labels) {
				t.Error("the labels do not match a selector of themselves")
			}
		})
	}
}

func TestParseSelectPartRejectsDamage(t *testing.T) {
	good := AppendSelectPart(nil, "a.ns", testkit.Pod("a", "", testkit.Labels{"app": "x", "tier": "web"}))
	for i := range len(good) {
		if _, _, err := ParseSelectPart(good[:i]); err == nil {
			t.Errorf("a select part truncated to %d of %d bytes parsed", i, len(good))
		}
	}
	for _, b := range [][]byte{{}, {0xc3}, {0xc0, 0x91, 0xa0}, {0xc0, 0x81, 0xa1, 'k', 0xc4, 0x00}} {
		if _, _, err := ParseSelectPart(b); err == nil {
			t.Errorf("ParseSelectPart(%x) succeeded", b)
		}
	}
}
