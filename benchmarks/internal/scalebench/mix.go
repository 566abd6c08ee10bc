package scalebench

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/warmcache/warmcache/benchmarks/internal/genserver"
	"github.com/warmcache/warmcache/internal/podgen"
)

// DefaultMixTypes is the number of resource types of a Mix whose Types is
// 0.
const DefaultMixTypes = 50

// MinMixTypes is the fewest resource types of a Mix: its built-ins. The
// other types of a Mix are custom resources.
const MinMixTypes = 5

// CRDGroup is the group of a Mix's custom resources.
const CRDGroup = "scale.warmcache.io"

// Mix describes the resources of the factory's phases: the server serves
// them and the factory watches them, so both are given the same Mix.
type Mix struct {
	// Objects is the number of objects in all. Every type has at least
	// one.
	Objects int `json:"objects"`
	// Types is the number of resource types, at least MinMixTypes; 0 for
	// DefaultMixTypes.
	Types int `json:"types,omitempty"`
	// Skew gives the pods a third of the objects and spreads the rest
	// evenly over the other types, as in a cluster where one resource
	// dominates; without it every type has an even share (within one).
	Skew bool `json:"skew,omitempty"`
}

// types returns m.Types or its default.
func (m Mix) types() int {
	if m.Types == 0 {
		return DefaultMixTypes
	}
	return m.Types
}

// Validate reports a Mix without objects or with fewer than MinMixTypes
// types (a Types of 0 stands for DefaultMixTypes).
func (m Mix) Validate() error {
	if m.Objects <= 0 || m.types() < MinMixTypes {
		return fmt.Errorf("scalebench: a mix of %d objects over %d types (want objects and at least %d types)", m.Objects, m.types(), MinMixTypes)
	}
	return nil
}

// Counts returns the number of objects of each type, in the order of
// Resources (pods first), each at least 1.
func (m Mix) Counts() []int {
	types := m.types()
	counts := make([]int, types)
	first, rest := 0, counts
	if m.Skew {
		counts[0] = m.Objects / 3
		first, rest = counts[0], counts[1:]
	}
	spread(m.Objects-first, rest)
	for k := range counts {
		counts[k] = max(counts[k], 1)
	}
	return counts
}

// spread sets out to n split as evenly as possible, the first ones taking
// the remainder.
func spread(n int, out []int) {
	for k := range out {
		out[k] = n / len(out)
		if k < n%len(out) {
			out[k]++
		}
	}
}

// share splits n in proportion to weights (the first ones taking what
// rounding leaves), so that a share never exceeds its weight when n is at
// most their sum.
func share(n int, weights []int) []int {
	total := 0
	for _, w := range weights {
		total += w
	}
	out := make([]int, len(weights))
	if total == 0 {
		return out
	}
	left := n
	for k, w := range weights {
		out[k] = n * w / total
		left -= out[k]
	}
	for k := 0; left > 0; k = (k + 1) % len(out) {
		if out[k] < weights[k] || n > total {
			out[k]++
			left--
		}
	}
	return out
}

// Resources returns the resources of m, with the objects of Counts: pods
// (internal/podgen), configmaps, secrets, services and serviceaccounts,
// typed and served as protobuf, and custom resources widget00s ... of
// CRDGroup, unstructured and served as JSON, each about 1.5 KB of JSON
// with a spec and a status.
func (m Mix) Resources() []genserver.Resource {
	counts := m.Counts()
	count := func(k int) int { return counts[k] }
	key := func(prefix string) func(int) (string, string) {
		return func(i int) (string, string) {
			return fmt.Sprintf("ns-%03d", i%podgen.Namespaces), fmt.Sprintf("%s-%08d", prefix, i)
		}
	}
	meta := func(prefix string, i int) metav1.ObjectMeta {
		ns, name := key(prefix)(i)
		return metav1.ObjectMeta{
			Namespace: ns, Name: name, UID: types.UID(fmt.Sprintf("%s-%08x-0000-4000-8000", prefix, i)),
			Labels:            map[string]string{"app": fmt.Sprintf("app-%d", i%997), "tier": []string{"frontend", "backend", "cache"}[i%3]},
			Annotations:       map[string]string{"example.com/owner": fmt.Sprintf("team-%d", i%40)},
			CreationTimestamp: metav1.Unix(1767300000+int64(i), 0),
		}
	}
	v1 := corev1.SchemeGroupVersion
	out := []genserver.Resource{
		genserver.Pods(count(0)),
		{GVR: v1.WithResource("configmaps"), Kind: "ConfigMap", Count: count(1), Key: key("cm"), New: func(i int) runtime.Object {
			data := map[string]string{}
			for j := range 6 {
				data[fmt.Sprintf("setting-%d.yaml", j)] = strings.Repeat(fmt.Sprintf("key%d: value-%d-%d\n", j, i, j), 8)
			}
			return &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{Kind: "ConfigMap", APIVersion: "v1"}, ObjectMeta: meta("cm", i), Data: data}
		}},
		{GVR: v1.WithResource("secrets"), Kind: "Secret", Count: count(2), Key: key("secret"), New: func(i int) runtime.Object {
			return &corev1.Secret{TypeMeta: metav1.TypeMeta{Kind: "Secret", APIVersion: "v1"}, ObjectMeta: meta("secret", i), Type: corev1.SecretTypeOpaque,
				Data: map[string][]byte{"tls.crt": []byte(strings.Repeat(fmt.Sprintf("%08x", i), 64)), "tls.key": []byte(strings.Repeat(fmt.Sprintf("%08x", i*7), 32))}}
		}},
		{GVR: v1.WithResource("services"), Kind: "Service", Count: count(3), Key: key("svc"), New: func(i int) runtime.Object {
			return &corev1.Service{TypeMeta: metav1.TypeMeta{Kind: "Service", APIVersion: "v1"}, ObjectMeta: meta("svc", i),
				Spec: corev1.ServiceSpec{
					Type: corev1.ServiceTypeClusterIP, ClusterIP: fmt.Sprintf("10.96.%d.%d", (i>>8)&255, i&255),
					Selector: map[string]string{"app": fmt.Sprintf("app-%d", i%997)},
					Ports: []corev1.ServicePort{
						{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080), Protocol: corev1.ProtocolTCP},
						{Name: "metrics", Port: 9090, TargetPort: intstr.FromInt32(9090), Protocol: corev1.ProtocolTCP},
					},
				}}
		}},
		{GVR: v1.WithResource("serviceaccounts"), Kind: "ServiceAccount", Count: count(4), Key: key("sa"), New: func(i int) runtime.Object {
			return &corev1.ServiceAccount{TypeMeta: metav1.TypeMeta{Kind: "ServiceAccount", APIVersion: "v1"}, ObjectMeta: meta("sa", i),
				Secrets: []corev1.ObjectReference{{Name: fmt.Sprintf("sa-%08d-token", i)}}}
		}},
	}
	for k := MinMixTypes; k < len(counts); k++ {
		kind := fmt.Sprintf("Widget%02d", k-MinMixTypes)
		prefix := strings.ToLower(kind)
		gvr := schema.GroupVersionResource{Group: CRDGroup, Version: "v1", Resource: prefix + "s"}
		out = append(out, genserver.Resource{GVR: gvr, Kind: kind, Count: count(k), Key: key(prefix), New: func(i int) runtime.Object {
			return widget(kind, prefix, i, meta(prefix, i))
		}})
	}
	return out
}

// widget returns a custom resource of kind.
func widget(kind, prefix string, i int, m metav1.ObjectMeta) *unstructured.Unstructured {
	env := make([]interface{}, 0, 6)
	for j := range 6 {
		env = append(env, map[string]interface{}{"name": fmt.Sprintf("SETTING_%d", j), "value": fmt.Sprintf("value-%d-%d-configuration", i, j)})
	}
	u := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": CRDGroup + "/v1",
		"kind":       kind,
		"spec": map[string]interface{}{
			"replicas": int64(1 + i%5),
			"image":    fmt.Sprintf("registry.example.com/team/%s:v1.%d", prefix, i%100),
			"env":      env,
			"selector": map[string]interface{}{"matchLabels": map[string]interface{}{"app": fmt.Sprintf("app-%d", i%997)}},
		},
		"status": map[string]interface{}{
			"observedGeneration": int64(1),
			"conditions": []interface{}{
				map[string]interface{}{"type": "Ready", "status": "True", "reason": "Reconciled", "lastTransitionTime": "2026-01-02T03:04:05Z"},
				map[string]interface{}{"type": "Progressing", "status": "False", "reason": "Done", "lastTransitionTime": "2026-01-02T03:04:05Z"},
			},
		},
	}}
	u.SetNamespace(m.Namespace)
	u.SetName(m.Name)
	u.SetUID(m.UID)
	u.SetLabels(m.Labels)
	u.SetAnnotations(m.Annotations)
	u.SetCreationTimestamp(m.CreationTimestamp)
	u.SetGeneration(1)
	return u
}
