package cli

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/warmcache/warmcache/internal/podgen"
	"github.com/warmcache/warmcache/store/bolt/inspect"
)

// TestSortPathMatchesContent checks that the sort value read from typed
// objects (evalFieldPath) is the one client-go's jsonpath reads from their
// content, for paths through strings, numbers, booleans, pointers, lists,
// maps, times, quantities and int-or-strings, present, empty and absent.
func TestSortPathMatchesContent(t *testing.T) {
	var objs []runtime.Object
	for i := range 20 {
		p := podgen.Pod(i)
		p.TypeMeta = metav1.TypeMeta{}
		if i%2 == 0 {
			p.Spec.Containers[0].LivenessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Port: intstr.FromInt32(8080)}}}
			p.Spec.NodeName = ""
			p.Status.StartTime = nil
		} else {
			p.Spec.Containers[0].LivenessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Port: intstr.FromString("http")}}}
			p.Spec.HostNetwork = true
		}
		objs = append(objs, p)
	}
	replicas := int32(3)
	objs = append(objs, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "a", Generation: 4},
		Spec: appsv1.DeploymentSpec{Replicas: &replicas}}, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "none"}})
	paths := []string{
		".metadata.name", "metadata.namespace", "{.metadata.creationTimestamp}", ".metadata.resourceVersion", ".metadata.generation",
		".metadata.labels.tier", ".metadata.labels.missing", ".metadata.uid", ".metadata.deletionTimestamp", ".metadata.ownerReferences[0].controller",
		".metadata.ownerReferences[3].name", ".metadata.managedFields[0].fieldsV1", ".metadata.managedFields[0].time",
		".spec.nodeName", ".spec.priority", ".spec.hostNetwork", ".spec.replicas", ".spec.containers[0].image", ".spec.containers[5].name",
		".spec.containers[0].ports[0].containerPort", ".spec.containers[1].resources.requests.cpu", ".spec.containers[0].livenessProbe.httpGet.port",
		".spec.securityContext.fsGroup", ".spec.terminationGracePeriodSeconds", ".spec", ".spec.containers",
		".status.phase", ".status.startTime", ".status.podIP", ".status.containerStatuses[0].restartCount", ".status.containerStatuses[0].ready",
		".status.conditions[2].lastTransitionTime", ".status.conditions[0].status", ".kind", ".apiVersion",
	}
	info := inspect.ResourceInfo{Identity: podsID}
	for _, path := range paths {
		fast, err := newSorter(path)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		slow := *fast
		slow.steps = nil
		for i, obj := range objs {
			if _, ok := obj.(*appsv1.Deployment); ok {
				info = inspect.ResourceInfo{Identity: deployID}
			}
			got, err1 := fast.value("k", obj, info)
			want, err2 := slow.value("k", obj, info)
			if (err1 != nil) != (err2 != nil) || got != want {
				t.Errorf("%s on object %d: %+v (%v), want %+v (%v)", path, i, got, err1, want, err2)
			}
		}
	}
}

// TestSortPathTyped checks that the common sort keys are read from typed
// objects, without their content (the speed of --sort-by).
func TestSortPathTyped(t *testing.T) {
	p := podgen.Pod(3)
	for _, path := range []string{".metadata.name", ".metadata.namespace", ".metadata.creationTimestamp", ".metadata.resourceVersion",
		".spec.nodeName", ".status.phase", ".status.startTime", ".status.podIP", ".status.containerStatuses[0].restartCount",
		".spec.containers[0].image", ".metadata.labels.tier", ".spec.containers[1].resources.requests.cpu"} {
		s, err := newSorter(path)
		if err != nil || s.steps == nil {
			t.Fatalf("%s: not plain steps (%v)", path, err)
		}
		if _, found, ok := evalFieldPath(p, s.steps); !ok || !found {
			t.Errorf("%s: found %v, ok %v; want both", path, found, ok)
		}
	}
}

func TestParseFieldPath(t *testing.T) {
	for expr, want := range map[string]bool{
		"{.metadata.name}": true, "{.a.b[0].c}": true, "{.a[12]}": true,
		"{.a[*]}": false, "{.a..b}": false, "{..a}": false, "{.a[?(@.x)]}": false, "{.a['b.c']}": false, "{.a[-1]}": false,
		"{.a[0:2]}": false, "{.a}{.b}": false, "{.}": false, ".a": false, "{.a[0]b}": false,
	} {
		if _, ok := parseFieldPath(expr); ok != want {
			t.Errorf("parseFieldPath(%q) ok = %v, want %v", expr, ok, want)
		}
	}
}
