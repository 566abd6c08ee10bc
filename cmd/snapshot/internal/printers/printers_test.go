package printers

import (
	"bytes"
	"encoding/json"
	"errors"
	"iter"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/warmcache/warmcache/cmd/snapshot/internal/golden"
	"github.com/warmcache/warmcache/cmd/snapshot/internal/jsondoc"
	"github.com/warmcache/warmcache/internal/podgen"
)

var (
	podKind    = schema.GroupVersionKind{Version: "v1", Kind: "Pod"}
	deployKind = schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}
	widgetKind = schema.GroupVersionKind{Group: "example.com", Version: "v1alpha1", Kind: "Widget"}
	// now is three days after podgen's first creationTimestamp.
	now = time.Date(2026, 1, 5, 3, 4, 5, 0, time.UTC)
)

func fixedNow() time.Time { return now }

// pods returns podgen pods with their TypeMeta cleared, as a cache holds
// them, plus pods in the states kubectl's STATUS column distinguishes.
func pods() []runtime.Object {
	var out []runtime.Object
	for i := range 3 {
		p := podgen.Pod(i)
		p.TypeMeta = metav1.TypeMeta{}
		out = append(out, p)
	}
	created := metav1.NewTime(now.Add(-90 * time.Minute))
	finished := metav1.NewTime(now.Add(-5 * time.Minute))
	mk := func(name string, mutate func(*corev1.Pod)) runtime.Object {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns-000", Name: name, CreationTimestamp: created},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c"}}},
			Status:     corev1.PodStatus{Phase: corev1.PodRunning},
		}
		mutate(p)
		return p
	}
	always := corev1.ContainerRestartPolicyAlways
	out = append(out,
		mk("crashing", func(p *corev1.Pod) {
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "c", RestartCount: 4,
				State:                corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}},
				LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, FinishedAt: finished}}}}
		}),
		mk("init-waiting", func(p *corev1.Pod) {
			p.Status.Phase = corev1.PodPending
			p.Spec.InitContainers = []corev1.Container{{Name: "i1"}, {Name: "i2"}}
			p.Status.InitContainerStatuses = []corev1.ContainerStatus{
				{Name: "i1", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0}}},
				{Name: "i2", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}},
			}
		}),
		mk("sidecar", func(p *corev1.Pod) {
			started := true
			p.Spec.InitContainers = []corev1.Container{{Name: "proxy", RestartPolicy: &always}}
			p.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: "proxy", Ready: true, Started: &started,
				State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "c", Ready: true, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
			p.Status.PodIPs = []corev1.PodIP{{IP: "fd00::1"}, {IP: "10.0.0.1"}}
			p.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: "example.com/ready"}}
		}),
		mk("terminating", func(p *corev1.Pod) {
			p.DeletionTimestamp = &finished
		}),
		mk("completed", func(p *corev1.Pod) {
			p.Status.Phase = corev1.PodSucceeded
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "c",
				State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "Completed"}}}}
		}),
		mk("gated", func(p *corev1.Pod) {
			p.Status.Phase = corev1.PodPending
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Reason: corev1.PodReasonSchedulingGated}}
		}),
	)
	return out
}

func deployments() []runtime.Object {
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", CreationTimestamp: metav1.NewTime(now.Add(-400 * 24 * time.Hour))}}
	return []runtime.Object{d}
}

func widgets() []runtime.Object {
	w := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "example.com/v1alpha1", "kind": "Widget",
		"metadata": map[string]interface{}{"name": "gizmo", "namespace": "lab", "creationTimestamp": "2026-01-05T03:03:00Z"},
		"spec":     map[string]interface{}{"size": int64(3), "script": "line one\n\nline three\n", "html": "<b>&</b>"},
	}}
	return []runtime.Object{w}
}

func seq(objs []runtime.Object) iter.Seq2[runtime.Object, error] {
	return func(yield func(runtime.Object, error) bool) {
		for _, o := range objs {
			if !yield(o, nil) {
				return
			}
		}
	}
}

func print(t *testing.T, opts Options, objs []runtime.Object) string {
	t.Helper()
	opts.Now = fixedNow
	p, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := p.Print(&out, seq(objs)); err != nil {
		t.Fatalf("Print: %v", err)
	}
	return out.String()
}

func TestGolden(t *testing.T) {
	tests := []struct {
		name string
		opts Options
		objs []runtime.Object
	}{
		{"pods-table", Options{Format: Table, Kind: podKind}, pods()},
		{"pods-wide", Options{Format: Wide, Kind: podKind}, pods()},
		{"pods-table-all-namespaces", Options{Format: Table, Kind: podKind, NamespaceColumn: true}, pods()[:3]},
		{"pods-no-headers", Options{Format: Table, Kind: podKind, NoHeaders: true}, pods()[:3]},
		{"pods-name", Options{Format: Name, Kind: podKind}, pods()[:2]},
		{"pod-yaml", Options{Format: YAML, Kind: podKind}, pods()[:1]},
		{"pod-json", Options{Format: JSON, Kind: podKind}, pods()[:1]},
		{"deployments-table", Options{Format: Table, Kind: deployKind, NamespaceColumn: true}, deployments()},
		{"deployments-name", Options{Format: Name, Kind: deployKind}, deployments()},
		{"deployments-json-list", Options{Format: JSON, Kind: deployKind, List: true}, deployments()},
		{"widgets-table", Options{Format: Wide, Kind: widgetKind}, widgets()},
		{"widgets-yaml-list", Options{Format: YAML, Kind: widgetKind, List: true}, widgets()},
		{"empty-json-list", Options{Format: JSON, List: true}, nil},
		{"empty-yaml-list", Options{Format: YAML, List: true}, nil},
		{"empty-table", Options{Format: Table}, nil},
		{"yaml-documents", Options{Format: YAML}, append(deployments(), widgets()...)},
		{"pod-jsonpath", Options{Format: "jsonpath={.kind} {.metadata.name} {.spec.containers[*].name} {.metadata.managedFields}"}, pods()[:1]},
		{"pods-jsonpath-list", Options{Format: `jsonpath={range .items[*]}{.metadata.name}{"\t"}{.status.phase}{"\n"}{end}`, List: true, Kind: podKind}, pods()},
		{"pods-custom-columns", Options{Format: "custom-columns=NAME:.metadata.name,PHASE:status.phase,PORTS:{.spec.containers[*].ports[*].containerPort},NONE:.x.y", Kind: podKind}, pods()},
		{"widgets-custom-columns", Options{Format: "custom-columns=KIND:.kind,SIZE:.spec.size", Kind: widgetKind}, widgets()},
		{"pods-go-template-list", Options{Format: `go-template={{range .items}}{{.metadata.name}} {{if exists . "spec" "nodeName"}}{{.spec.nodeName}}{{else}}-{{end}}{{"\n"}}{{end}}`, List: true, Kind: podKind}, pods()},
		{"deployment-go-template", Options{Format: `template={{.kind}}/{{.metadata.name}} {{.spec.replicas}}`, Kind: deployKind}, deployments()[:1]},
		{"pods-show-labels-kind", Options{Format: Table, Kind: podKind, ShowLabels: true, ShowKind: true, LabelColumns: []string{"tier", "absent"}}, pods()[:3]},
		{"pods-json-managed-fields", Options{Format: JSON, Kind: podKind, ShowManagedFields: true}, pods()[:1]},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			golden.Check(t, tt.name, []byte(print(t, tt.opts, tt.objs)))
		})
	}
}

// TestListsParseBack checks that the streamed List documents are valid and
// hold every object, with apiVersion and kind set.
func TestListsParseBack(t *testing.T) {
	objs := append(pods()[:3], pods()[4])
	for _, format := range []string{JSON, YAML} {
		t.Run(format, func(t *testing.T) {
			out := print(t, Options{Format: format, Kind: podKind, List: true, ShowManagedFields: true}, objs)
			var list struct {
				APIVersion string                   `json:"apiVersion"`
				Kind       string                   `json:"kind"`
				Items      []map[string]interface{} `json:"items"`
			}
			if err := yaml.Unmarshal([]byte(out), &list); err != nil {
				t.Fatalf("output does not parse: %v\n%s", err, out)
			}
			if list.APIVersion != "v1" || list.Kind != "List" || len(list.Items) != len(objs) {
				t.Fatalf("got %s %s with %d items, want v1 List with %d", list.APIVersion, list.Kind, len(list.Items), len(objs))
			}
			for i, item := range list.Items {
				pod := &corev1.Pod{}
				if err := runtime.DefaultUnstructuredConverter.FromUnstructured(item, pod); err != nil {
					t.Fatal(err)
				}
				want := objs[i].(*corev1.Pod).DeepCopy()
				want.APIVersion, want.Kind = "v1", "Pod"
				if !equality.Semantic.DeepEqual(pod, want) {
					t.Errorf("item %d differs from the object printed", i)
				}
			}
		})
	}
}

func TestYAMLListKeepsBlockScalars(t *testing.T) {
	out := print(t, Options{Format: YAML, List: true}, append(widgets(), widgets()...))
	var list struct {
		Items []unstructured.Unstructured `json:"items"`
	}
	if err := yaml.Unmarshal([]byte(out), &list); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, item := range list.Items {
		if got, _, _ := unstructured.NestedString(item.Object, "spec", "script"); got != "line one\n\nline three\n" {
			t.Errorf("script = %q", got)
		}
	}
}

func TestPrintDoesNotModifyObjects(t *testing.T) {
	objs := append(pods(), widgets()...)
	before := make([]runtime.Object, len(objs))
	for i, o := range objs {
		before[i] = o.DeepCopyObject()
	}
	strip := func(d *jsondoc.Doc) {
		if md, ok := d.Get(d.Root(), "metadata"); ok {
			d.Delete(md, "name")
		}
		d.Delete(d.Root(), "spec")
	}
	for _, f := range Formats {
		print(t, Options{Format: f, Transform: strip, List: true}, objs)
	}
	for i := range objs {
		if !equality.Semantic.DeepEqual(objs[i], before[i]) {
			t.Errorf("object %d was modified by printing", i)
		}
	}
}

func TestTransformApplies(t *testing.T) {
	out := print(t, Options{Format: JSON, Transform: func(d *jsondoc.Doc) { d.Delete(d.Root(), "spec") }}, widgets())
	if strings.Contains(out, `"spec"`) {
		t.Errorf("transformed output still has spec:\n%s", out)
	}
	var m map[string]interface{}
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatal(err)
	}
}

func TestUnknownFormat(t *testing.T) {
	_, err := New(Options{Format: "xml"})
	if !errors.Is(err, ErrUnknownFormat) {
		t.Fatalf("New(xml) = %v, want ErrUnknownFormat", err)
	}
	for _, f := range Formats {
		if !strings.Contains(err.Error(), f) {
			t.Errorf("error %q does not list format %q", err, f)
		}
	}
}

func TestPrintStopsAtSequenceError(t *testing.T) {
	errBoom := errors.New("boom")
	for _, f := range Formats {
		t.Run(f, func(t *testing.T) {
			p, err := New(Options{Format: f, List: true})
			if err != nil {
				t.Fatal(err)
			}
			calls := 0
			objs := func(yield func(runtime.Object, error) bool) {
				calls++
				if !yield(pods()[0], nil) {
					return
				}
				calls++
				if !yield(nil, errBoom) {
					return
				}
				t.Error("sequence continued after the printer got an error")
			}
			if err := p.Print(&bytes.Buffer{}, objs); !errors.Is(err, errBoom) {
				t.Errorf("Print = %v, want %v", err, errBoom)
			}
		})
	}
}

func TestTableWidthsStickAcrossBlocks(t *testing.T) {
	const long, longer = "a-rather-long-first-name", "an-even-longer-name-in-the-second-block"
	// The header and FlushRows-1 pods fill the first block; the second
	// block holds the remaining pods.
	tests := []struct {
		name                  string
		lastName              string
		wantFirst, wantSecond int // column of READY in each block
	}{
		{"shorter names keep the widths", "p", len(long) + 3, len(long) + 3},
		{"a longer name widens the later block only", longer, len(long) + 3, len(longer) + 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var objs []runtime.Object
			for i := range FlushRows + 2 {
				name := "p"
				switch i {
				case 0:
					name = long
				case FlushRows + 1:
					name = tt.lastName
				}
				objs = append(objs, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}})
			}
			lines := strings.Split(strings.TrimSuffix(print(t, Options{Format: Table, Kind: podKind}, objs), "\n"), "\n")
			if len(lines) != FlushRows+3 {
				t.Fatalf("%d lines, want %d", len(lines), FlushRows+3)
			}
			col := func(l string) int { return strings.Index(l, "0/0") }
			for i, l := range lines[1:] {
				want := tt.wantFirst
				if i+1 >= FlushRows {
					want = tt.wantSecond
				}
				if got := col(l); got != want {
					t.Fatalf("line %d: READY column at %d, want %d: %q", i+1, got, want, l)
				}
			}
		})
	}
}
