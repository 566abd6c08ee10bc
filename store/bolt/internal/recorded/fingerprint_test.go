package recorded

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// podWithNewField stands for corev1.Pod after an API upgrade added a field.
type podWithNewField struct {
	corev1.Pod
	Added string `json:"added,omitempty" protobuf:"bytes,99,opt,name=added"`
}

// podRetagged is a pod whose added field has another tag.
type podRetagged struct {
	corev1.Pod
	Added string `json:"added,omitempty" protobuf:"bytes,100,opt,name=added"`
}

// tree is a recursive type, as some API types are (JSONSchemaProps).
type tree struct {
	runtime.Object
	Children []tree
	Next     *tree
}

// gvk is the group, version and kind of a resource.
type gvk struct{ group, version, kind string }

func TestTypeFingerprint(t *testing.T) {
	pods := gvk{"", "v1", "Pod"}
	pod := Fingerprint(&corev1.Pod{}, "", "", "")
	if !strings.HasPrefix(pod, "sha256:") {
		t.Fatalf("fingerprint of a pod = %q", pod)
	}
	tests := []struct {
		name      string
		prototype runtime.Object
		id        gvk
		same      bool // as the pod's
		empty     bool
	}{
		{name: "same type again", prototype: &corev1.Pod{}, same: true},
		{name: "from client-go's scheme", id: pods, same: true},
		{name: "prototype wins over the scheme", prototype: &corev1.Node{}, id: pods},
		{name: "another kind", id: gvk{"", "v1", "Node"}},
		{name: "a field added", prototype: &podWithNewField{}},
		{name: "a tag changed", prototype: &podRetagged{}},
		{name: "recursive type", prototype: &tree{}},
		{name: "kind unknown to the scheme", id: gvk{"example.com", "v1", "Widget"}, empty: true},
		{name: "no kind, no prototype", id: gvk{"", "v1", ""}, empty: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Fingerprint(tc.prototype, tc.id.group, tc.id.version, tc.id.kind)
			switch {
			case tc.empty:
				if got != "" {
					t.Errorf("fingerprint = %q, want none", got)
				}
			case tc.same != (got == pod):
				t.Errorf("fingerprint = %q, pod's = %q, want same = %v", got, pod, tc.same)
			case got == "":
				t.Error("no fingerprint")
			}
		})
	}
	// The same type name and package, only the structure differs: a
	// fingerprint of names alone would not tell them apart.
	if a, b := fingerprintV1(), fingerprintV2(); a == b {
		t.Errorf("a changed field keeps the fingerprint %q", a)
	}
	if a, b := fingerprintV1(), fingerprintV1(); a != b {
		t.Errorf("fingerprint not deterministic: %q, %q", a, b)
	}
}

func fingerprintV1() string {
	type versioned struct {
		corev1.Pod
		Added string `json:"added"`
	}
	return Fingerprint(&versioned{}, "", "", "")
}

func fingerprintV2() string {
	type versioned struct {
		corev1.Pod
		Added int `json:"added"`
	}
	return Fingerprint(&versioned{}, "", "", "")
}

func BenchmarkTypeFingerprint(b *testing.B) {
	for b.Loop() {
		Fingerprint(&corev1.Pod{}, "", "", "")
	}
}
