package podgen

import (
	"crypto/sha256"
	"encoding/hex"
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

// goldenIndices cover the wrap-arounds of every modulus Pod uses and
// indices past 16 and 24 bits (the addresses' octets).
var goldenIndices = []int{0, 1, 2, 3, 9, 10, 49, 50, 99, 100, 996, 997, 4999, 5000, 9972, 9973, 12345, 65535, 65536, 999999, 1<<24 + 77}

// goldenDigest is the SHA-256 of the JSON of Pod(i) for every index of
// goldenIndices, in order: what the benchmarks' figures were measured
// with. A change to the generated pods changes it.
const goldenDigest = "a0cc85e7da0666a8b37045728189b01359c0814526b00ca99c8a9fe0ae223929"

func TestPodsAreUnchanged(t *testing.T) {
	h := sha256.New()
	for _, i := range goldenIndices {
		b, err := json.Marshal(Pod(i))
		if err != nil {
			t.Fatal(err)
		}
		h.Write(b)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != goldenDigest {
		t.Errorf("the pods changed: digest %s, want %s", got, goldenDigest)
	}
}

func BenchmarkPod(b *testing.B) {
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		Pod(i)
	}
}
