package podgen

import (
	"encoding/json"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
)

func TestPodIsRealisticAndDeterministic(t *testing.T) {
	p := Pod(12345)
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(b); n < 7000 || n > 10000 {
		t.Errorf("pod JSON is %d bytes, want about 8 KB", n)
	}
	if !equality.Semantic.DeepEqual(p, Pod(12345)) {
		t.Error("Pod(i) is not deterministic")
	}
	if Pod(1).Name == Pod(2).Name || Pod(1).UID == Pod(2).UID {
		t.Error("distinct pods share a name or UID")
	}
	if ns, name := Key(12345); ns != p.Namespace || name != p.Name {
		t.Errorf("Key(12345) = %s/%s, Pod(12345) is %s/%s", ns, name, p.Namespace, p.Name)
	}
	if got := len(Pods(7)); got != 7 {
		t.Errorf("Pods(7) returned %d pods", got)
	}
}
