// Package podgen generates realistic Pods for tests and benchmarks: labels,
// annotations, two containers with env, resources and ports, managedFields
// and a status with conditions — about 8 KB of JSON each, close to what a
// busy cluster's pods weigh.
//
// Output is deterministic: the same (i, seed) always yields the same Pod.
package podgen

import (
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Namespaces is the number of distinct namespaces pods are spread over.
const Namespaces = 50

var epoch = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// Pod returns the i-th generated pod. Its resourceVersion is i+1 (as a
// decimal string) unless the caller changes it.
func Pod(i int) *corev1.Pod {
	ns, name := Key(i)
	app := "app-" + strconv.Itoa(i%997)
	created := metav1.NewTime(epoch.Add(time.Duration(i) * time.Second))
	uid := types.UID(hexPad(i, 8) + "-0000-4000-8000-" + hexPad(i*7919, 12))
	labels := map[string]string{
		"app.kubernetes.io/name":       app,
		"app.kubernetes.io/instance":   app + "-prod",
		"app.kubernetes.io/component":  "server",
		"app.kubernetes.io/managed-by": "warmcache-podgen",
		"pod-template-hash":            hexPad(i%9973, 10),
		"tier":                         []string{"frontend", "backend", "cache"}[i%3],
	}
	annotations := map[string]string{
		"kubectl.kubernetes.io/restartedAt":              created.UTC().Format(time.RFC3339),
		"prometheus.io/scrape":                           "true",
		"prometheus.io/port":                             "9090",
		"cluster-autoscaler.kubernetes.io/safe-to-evict": "true",
		"example.com/build":                              `{"commit":"` + hexPad(i*104729, 40) + `","pipeline":` + strconv.Itoa(i) + `,"branch":"main"}`,
	}
	fields := func(f string) *metav1.FieldsV1 { return &metav1.FieldsV1{Raw: []byte(f)} }
	return &corev1.Pod{
		TypeMeta: metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"},
		ObjectMeta: metav1.ObjectMeta{
			Name:              name,
			Namespace:         ns,
			UID:               uid,
			ResourceVersion:   strconv.Itoa(i + 1),
			Generation:        1,
			CreationTimestamp: created,
			Labels:            labels,
			Annotations:       annotations,
			GenerateName:      app + "-",
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "apps/v1", Kind: "ReplicaSet", Name: app + "-7d9f8b6c5d",
				UID: types.UID("rs-" + hexPad(i%997, 8)), Controller: boolPtr(true), BlockOwnerDeletion: boolPtr(true),
			}},
			ManagedFields: []metav1.ManagedFieldsEntry{
				{Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1", Time: &created, FieldsType: "FieldsV1",
					FieldsV1: fields(`{"f:metadata":{"f:generateName":{},"f:labels":{".":{},"f:app.kubernetes.io/name":{},"f:pod-template-hash":{}},"f:ownerReferences":{".":{},"k:{\"uid\":\"x\"}":{}}},"f:spec":{"f:containers":{"k:{\"name\":\"server\"}":{".":{},"f:env":{},"f:image":{},"f:name":{},"f:ports":{},"f:resources":{}}}}}`)},
				{Manager: "kubelet", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1", Time: &created, FieldsType: "FieldsV1", Subresource: "status",
					FieldsV1: fields(`{"f:status":{"f:conditions":{"k:{\"type\":\"Ready\"}":{".":{},"f:lastProbeTime":{},"f:lastTransitionTime":{},"f:status":{},"f:type":{}}},"f:containerStatuses":{},"f:hostIP":{},"f:phase":{},"f:podIP":{},"f:podIPs":{},"f:startTime":{}}}`)},
			},
		},
		Spec: corev1.PodSpec{
			NodeName:                      "node-" + decPad(i%5000, 4),
			ServiceAccountName:            app,
			RestartPolicy:                 corev1.RestartPolicyAlways,
			DNSPolicy:                     corev1.DNSClusterFirst,
			SchedulerName:                 "default-scheduler",
			TerminationGracePeriodSeconds: int64Ptr(30),
			Priority:                      int32Ptr(0),
			EnableServiceLinks:            boolPtr(true),
			PreemptionPolicy:              (*corev1.PreemptionPolicy)(strPtr(string(corev1.PreemptLowerPriority))),
			SecurityContext:               &corev1.PodSecurityContext{RunAsNonRoot: boolPtr(true), FSGroup: int64Ptr(2000)},
			Containers:                    []corev1.Container{container("server", app, i, 8080), container("sidecar", app+"-proxy", i, 15001)},
			Volumes: []corev1.Volume{{
				Name: "kube-api-access", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
					DefaultMode: int32Ptr(420),
					Sources: []corev1.VolumeProjection{
						{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: int64Ptr(3607)}},
						{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"}, Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
					},
				}},
			}},
			Tolerations: []corev1.Toleration{
				{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: int64Ptr(300)},
				{Key: "node.kubernetes.io/unreachable", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: int64Ptr(300)},
			},
		},
		Status: corev1.PodStatus{
			Phase:     corev1.PodRunning,
			HostIP:    "10." + strconv.Itoa((i>>16)&255) + "." + strconv.Itoa((i>>8)&255) + "." + strconv.Itoa(i&255),
			PodIP:     "172." + strconv.Itoa(16+(i>>16)&15) + "." + strconv.Itoa((i>>8)&255) + "." + strconv.Itoa(i&255),
			StartTime: &created,
			QOSClass:  corev1.PodQOSBurstable,
			Conditions: []corev1.PodCondition{
				{Type: corev1.PodReadyToStartContainers, Status: corev1.ConditionTrue, LastTransitionTime: created},
				{Type: corev1.PodInitialized, Status: corev1.ConditionTrue, LastTransitionTime: created},
				{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: created},
				{Type: corev1.ContainersReady, Status: corev1.ConditionTrue, LastTransitionTime: created},
				{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: created},
			},
			ContainerStatuses: []corev1.ContainerStatus{status("server", app, i, created), status("sidecar", app+"-proxy", i, created)},
		},
	}
}

// Key returns the namespace and name of the i-th generated pod without
// generating it.
func Key(i int) (namespace, name string) {
	return "ns-" + decPad(i%Namespaces, 3), "app-" + strconv.Itoa(i%997) + "-" + decPad(i, 8) + "-x7k2p"
}

// Pods returns pods 0..n-1.
func Pods(n int) []*corev1.Pod {
	out := make([]*corev1.Pod, n)
	for i := range out {
		out[i] = Pod(i)
	}
	return out
}

func container(name, image string, i, port int) corev1.Container {
	env := make([]corev1.EnvVar, 0, 8)
	for j := 0; j < 10; j++ {
		env = append(env, corev1.EnvVar{Name: name + "_SETTING_" + strconv.Itoa(j), Value: "value-" + strconv.Itoa(i) + "-" + strconv.Itoa(j) + "-some-longer-configuration-string"})
	}
	env = append(env, corev1.EnvVar{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.name"}}})
	return corev1.Container{
		Name:  name,
		Image: imageName(image, i),
		Args:  []string{"--port=" + strconv.Itoa(port), "--log-level=info", "--metrics-addr=:9090"},
		Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: int32(port), Protocol: corev1.ProtocolTCP}, {Name: "metrics", ContainerPort: 9090, Protocol: corev1.ProtocolTCP}},
		Env:   env,
		Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: requestCPU.DeepCopy(), corev1.ResourceMemory: requestMemory.DeepCopy()},
			Limits:   corev1.ResourceList{corev1.ResourceCPU: limitCPU.DeepCopy(), corev1.ResourceMemory: limitMemory.DeepCopy()},
		},
		ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/readyz", Port: intstr.FromInt32(int32(port)), Scheme: corev1.URISchemeHTTP}},
			PeriodSeconds: 10, TimeoutSeconds: 1, SuccessThreshold: 1, FailureThreshold: 3},
		VolumeMounts:             []corev1.VolumeMount{{Name: "kube-api-access", ReadOnly: true, MountPath: "/var/run/secrets/kubernetes.io/serviceaccount"}},
		TerminationMessagePath:   "/dev/termination-log",
		TerminationMessagePolicy: corev1.TerminationMessageReadFile,
		ImagePullPolicy:          corev1.PullIfNotPresent,
		SecurityContext:          &corev1.SecurityContext{AllowPrivilegeEscalation: boolPtr(false), ReadOnlyRootFilesystem: boolPtr(true), Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}},
	}
}

func status(name, image string, i int, started metav1.Time) corev1.ContainerStatus {
	return corev1.ContainerStatus{
		Name: name, Ready: true, Started: boolPtr(true), RestartCount: int32(i % 3),
		Image:       imageName(image, i),
		ImageID:     "registry.example.com/team/" + image + "@sha256:" + hexPad(i*31, 64),
		ContainerID: "containerd://" + hexPad(i*131, 64),
		State:       corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: started}},
	}
}

// The containers' resources, parsed once: each pod gets copies.
var (
	requestCPU    = resource.MustParse("100m")
	requestMemory = resource.MustParse("128Mi")
	limitCPU      = resource.MustParse("1")
	limitMemory   = resource.MustParse("512Mi")
)

func imageName(image string, i int) string {
	return "registry.example.com/team/" + image + ":v1." + strconv.Itoa(i%10) + "." + strconv.Itoa(i%100)
}

// decPad returns v (not negative) in decimal, padded with zeros to width
// digits, as fmt's %0*d does.
func decPad(v, width int) string { return pad(strconv.Itoa(v), width) }

// hexPad returns v (not negative) in lower-case hexadecimal, padded with
// zeros to width digits, as fmt's %0*x does.
func hexPad(v, width int) string { return pad(strconv.FormatInt(int64(v), 16), width) }

func pad(s string, width int) string {
	if len(s) >= width {
		return s
	}
	return strings.Repeat("0", width-len(s)) + s
}

func boolPtr(b bool) *bool    { return &b }
func int32Ptr(v int32) *int32 { return &v }
func int64Ptr(v int64) *int64 { return &v }
func strPtr(s string) *string { return &s }
