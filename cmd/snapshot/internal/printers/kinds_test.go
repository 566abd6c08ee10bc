package printers

import (
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"

	"github.com/warmcache/warmcache/cmd/snapshot/internal/golden"
)

// kindObjects are objects of every kind with a table of its own, in the
// states their columns distinguish.
func kindObjects() map[string][]runtime.Object {
	om := func(name string, ageOf time.Duration) metav1.ObjectMeta {
		return metav1.ObjectMeta{Namespace: "web", Name: name, CreationTimestamp: metav1.NewTime(now.Add(-ageOf))}
	}
	ctrs := corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app:v1"}, {Name: "proxy", Image: "proxy:v2"}}}
	tmpl := corev1.PodTemplateSpec{Spec: ctrs}
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
	started := metav1.NewTime(now.Add(-10 * time.Minute))
	done := metav1.NewTime(now.Add(-7 * time.Minute))
	fs := corev1.PersistentVolumeFilesystem
	return map[string][]runtime.Object{
		"deployments": {
			&appsv1.Deployment{ObjectMeta: om("web", 49*time.Hour), Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](3), Selector: sel, Template: tmpl},
				Status: appsv1.DeploymentStatus{ReadyReplicas: 2, UpdatedReplicas: 3, AvailableReplicas: 2}},
		},
		"replicasets": {
			&appsv1.ReplicaSet{ObjectMeta: om("web-7d9f8b6c5d", time.Hour), Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To[int32](3), Selector: sel, Template: tmpl},
				Status: appsv1.ReplicaSetStatus{Replicas: 3, ReadyReplicas: 1}},
		},
		"statefulsets": {
			&appsv1.StatefulSet{ObjectMeta: om("db", 3*time.Hour), Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](3), Template: tmpl},
				Status: appsv1.StatefulSetStatus{ReadyReplicas: 3}},
		},
		"daemonsets": {
			&appsv1.DaemonSet{ObjectMeta: om("agent", 20*24*time.Hour), Spec: appsv1.DaemonSetSpec{Selector: sel,
				Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{NodeSelector: map[string]string{"kubernetes.io/os": "linux"}, Containers: ctrs.Containers}}},
				Status: appsv1.DaemonSetStatus{DesiredNumberScheduled: 5, CurrentNumberScheduled: 5, NumberReady: 4, UpdatedNumberScheduled: 5, NumberAvailable: 4}},
		},
		"services": {
			&corev1.Service{ObjectMeta: om("web", 5*time.Minute), Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, ClusterIPs: []string{"10.96.0.10"},
				Ports: []corev1.ServicePort{{Port: 80, Protocol: corev1.ProtocolTCP}, {Port: 443, Protocol: corev1.ProtocolTCP}}, Selector: map[string]string{"app": "web"}}},
			&corev1.Service{ObjectMeta: om("lb", 5*time.Minute), Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, ClusterIPs: []string{"10.96.0.11"},
				Ports: []corev1.ServicePort{{Port: 443, NodePort: 30443, Protocol: corev1.ProtocolTCP}}},
				Status: corev1.ServiceStatus{LoadBalancer: corev1.LoadBalancerStatus{Ingress: []corev1.LoadBalancerIngress{{Hostname: "a-very-long-load-balancer.example.com"}}}}},
			&corev1.Service{ObjectMeta: om("pending", 5*time.Minute), Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, ClusterIPs: []string{"10.96.0.12"}}},
			&corev1.Service{ObjectMeta: om("ext", 5*time.Minute), Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "db.example.com"}},
		},
		"endpoints": {
			&corev1.Endpoints{ObjectMeta: om("web", time.Minute), Subsets: []corev1.EndpointSubset{{ //nolint:staticcheck
				Addresses: []corev1.EndpointAddress{{IP: "10.0.0.1"}, {IP: "10.0.0.2"}, {IP: "10.0.0.3"}},
				Ports:     []corev1.EndpointPort{{Port: 8080}, {Port: 9090}}}}},
			&corev1.Endpoints{ObjectMeta: om("none", time.Minute)}, //nolint:staticcheck
		},
		"endpointslices": {
			&discoveryv1.EndpointSlice{ObjectMeta: om("web-abcde", time.Minute), AddressType: discoveryv1.AddressTypeIPv4,
				Ports:     []discoveryv1.EndpointPort{{Port: ptr.To[int32](8080)}},
				Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"10.0.0.1"}}, {Addresses: []string{"10.0.0.2"}}, {Addresses: []string{"10.0.0.3"}}, {Addresses: []string{"10.0.0.4"}}}},
		},
		"nodes": {
			&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1", CreationTimestamp: metav1.NewTime(now.Add(-90 * 24 * time.Hour)),
				Labels: map[string]string{"node-role.kubernetes.io/control-plane": "", "node-role.kubernetes.io/worker": ""}},
				Spec: corev1.NodeSpec{Unschedulable: true},
				Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
					Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "192.168.0.1"}},
					NodeInfo:  corev1.NodeSystemInfo{KubeletVersion: "v1.36.3", OSImage: "Debian", KernelVersion: "6.1.0", Architecture: "amd64", ContainerRuntimeVersion: "containerd://2.0"}}},
			&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-2", CreationTimestamp: metav1.NewTime(now.Add(-2 * time.Hour))},
				Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionUnknown}}}},
		},
		"namespaces": {
			&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "web", CreationTimestamp: metav1.NewTime(now.Add(-time.Hour))}, Status: corev1.NamespaceStatus{Phase: corev1.NamespaceActive}},
		},
		"configmaps": {
			&corev1.ConfigMap{ObjectMeta: om("settings", time.Hour), Data: map[string]string{"a": "1", "b": "2"}, BinaryData: map[string][]byte{"c": {1}}},
		},
		"secrets": {
			&corev1.Secret{ObjectMeta: om("tls", time.Hour), Type: corev1.SecretTypeTLS, Data: map[string][]byte{"tls.crt": nil, "tls.key": nil}},
		},
		"jobs": {
			&batchv1.Job{ObjectMeta: om("done", time.Hour), Spec: batchv1.JobSpec{Completions: ptr.To[int32](1), Template: tmpl},
				Status: batchv1.JobStatus{Succeeded: 1, StartTime: &started, CompletionTime: &done,
					Conditions: []batchv1.JobCondition{{Type: batchv1.JobComplete, Status: corev1.ConditionTrue}}}},
			&batchv1.Job{ObjectMeta: om("running", time.Hour), Spec: batchv1.JobSpec{Parallelism: ptr.To[int32](4), Template: tmpl},
				Status: batchv1.JobStatus{StartTime: &started}},
		},
		"persistentvolumes": {
			&corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-1", CreationTimestamp: metav1.NewTime(now.Add(-time.Hour))},
				Spec: corev1.PersistentVolumeSpec{Capacity: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("10Gi")},
					AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany, corev1.ReadWriteOnce},
					PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain, StorageClassName: "standard", VolumeMode: &fs,
					ClaimRef: &corev1.ObjectReference{Namespace: "web", Name: "data"}},
				Status: corev1.PersistentVolumeStatus{Phase: corev1.VolumeBound}},
		},
		"persistentvolumeclaims": {
			&corev1.PersistentVolumeClaim{ObjectMeta: om("data", time.Hour),
				Spec: corev1.PersistentVolumeClaimSpec{VolumeName: "pv-1", StorageClassName: ptr.To("standard"), VolumeMode: &fs},
				Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound, AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					Capacity: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("10Gi")}}},
			&corev1.PersistentVolumeClaim{ObjectMeta: om("pending", time.Minute), Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimPending}},
		},
		"events": {
			&corev1.Event{ObjectMeta: om("web-0.1", time.Hour), Type: corev1.EventTypeWarning, Reason: "BackOff", Message: " Back-off restarting failed container \n",
				InvolvedObject: corev1.ObjectReference{Kind: "Pod", Name: "web-0", FieldPath: "spec.containers{app}"}, Count: 7,
				FirstTimestamp: metav1.NewTime(now.Add(-time.Hour)), LastTimestamp: metav1.NewTime(now.Add(-time.Minute)),
				Source: corev1.EventSource{Component: "kubelet", Host: "node-1"}},
			&corev1.Event{ObjectMeta: om("web.2", time.Hour), Type: corev1.EventTypeNormal, Reason: "ScalingReplicaSet", Message: "Scaled up",
				InvolvedObject: corev1.ObjectReference{Kind: "Deployment", Name: "web"}, EventTime: metav1.NewMicroTime(now.Add(-2 * time.Minute)),
				ReportingController: "deployment-controller"},
		},
	}
}

// kindsOf maps the test's resource names to kinds.
var kindsOf = map[string]schema.GroupVersionKind{
	"deployments": {Group: "apps", Version: "v1", Kind: "Deployment"}, "replicasets": {Group: "apps", Version: "v1", Kind: "ReplicaSet"},
	"statefulsets": {Group: "apps", Version: "v1", Kind: "StatefulSet"}, "daemonsets": {Group: "apps", Version: "v1", Kind: "DaemonSet"},
	"services": {Version: "v1", Kind: "Service"}, "endpoints": {Version: "v1", Kind: "Endpoints"},
	"endpointslices": {Group: "discovery.k8s.io", Version: "v1", Kind: "EndpointSlice"}, "nodes": {Version: "v1", Kind: "Node"},
	"namespaces": {Version: "v1", Kind: "Namespace"}, "configmaps": {Version: "v1", Kind: "ConfigMap"}, "secrets": {Version: "v1", Kind: "Secret"},
	"jobs": {Group: "batch", Version: "v1", Kind: "Job"}, "persistentvolumes": {Version: "v1", Kind: "PersistentVolume"},
	"persistentvolumeclaims": {Version: "v1", Kind: "PersistentVolumeClaim"}, "events": {Version: "v1", Kind: "Event"},
}

// TestKindTables checks kubectl's table and -o wide columns of every kind
// with columns of its own, from typed objects and from their unstructured
// content (as a dynamic informer caches them): both print the same.
func TestKindTables(t *testing.T) {
	for name, objs := range kindObjects() {
		kind, ok := kindsOf[name]
		if !ok {
			t.Fatalf("no kind for %s", name)
		}
		var unstr []runtime.Object
		for _, o := range objs {
			m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
			if err != nil {
				t.Fatal(err)
			}
			unstr = append(unstr, &unstructured.Unstructured{Object: m})
		}
		for _, format := range []string{Table, Wide} {
			t.Run(name+"-"+format, func(t *testing.T) {
				got := print(t, Options{Format: format, Kind: kind}, objs)
				golden.Check(t, "kind-"+name+"-"+format, []byte(got))
				if u := print(t, Options{Format: format, Kind: kind}, unstr); u != got {
					t.Errorf("unstructured objects print\n%s\ntyped ones\n%s", u, got)
				}
			})
		}
	}
}

// TestCRDColumns checks a custom resource's table from its CRD's
// additionalPrinterColumns.
func TestCRDColumns(t *testing.T) {
	cols := []PrinterColumn{
		{Name: "Size", Type: "integer", JSONPath: ".spec.size"},
		{Name: "Script", Type: "string", JSONPath: ".spec.script", Priority: 1},
		{Name: "Missing", Type: "string", JSONPath: ".status.phase"},
		{Name: "Created", Type: "date", JSONPath: ".metadata.creationTimestamp"},
	}
	for _, format := range []string{Table, Wide} {
		t.Run(format, func(t *testing.T) {
			golden.Check(t, "widgets-crd-"+format, []byte(print(t, Options{Format: format, Kind: widgetKind, PrinterColumns: cols}, widgets())))
		})
	}
}
