package testkit

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// DefaultNamespace is the namespace of the pods Pod makes unless a
// Namespace option says otherwise.
const DefaultNamespace = "ns"

// Pod returns a new pod named name at resourceVersion rv ("" for none) in
// namespace DefaultNamespace, then changed by opts in order. It sets
// nothing else: no TypeMeta, UID, labels or spec unless an option does.
// The pod is the caller's.
func Pod(name, rv string, opts ...PodOption) *corev1.Pod {
	p := &corev1.Pod{}
	p.Namespace, p.Name, p.ResourceVersion = DefaultNamespace, name, rv
	for _, o := range opts {
		o.applyToPod(p)
	}
	return p
}

// Pods returns Pod(name, "") for each of names, in order, as objects: the
// contents of a fake source or of a store's list.
func Pods(names ...string) []runtime.Object {
	out := make([]runtime.Object, len(names))
	for i, n := range names {
		out[i] = Pod(n, "")
	}
	return out
}

// A PodOption changes a pod Pod makes.
type PodOption interface {
	applyToPod(*corev1.Pod)
}

// Namespace is a PodOption setting the pod's namespace; "" makes a pod
// without one.
type Namespace string

func (n Namespace) applyToPod(p *corev1.Pod) { p.Namespace = string(n) }

// Labels is a PodOption setting the pod's labels to the map itself, not a
// copy: a nil map leaves the pod without labels, an empty one gives it an
// empty map.
type Labels map[string]string

func (l Labels) applyToPod(p *corev1.Pod) { p.Labels = l }

// Node is a PodOption setting the node the pod is bound to
// (spec.nodeName).
type Node string

func (n Node) applyToPod(p *corev1.Pod) { p.Spec.NodeName = string(n) }

// PodFunc is a PodOption that changes the pod as it likes, for what the
// other options do not set.
type PodFunc func(*corev1.Pod)

func (f PodFunc) applyToPod(p *corev1.Pod) { f(p) }
