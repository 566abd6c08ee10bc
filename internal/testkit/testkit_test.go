package testkit

import (
	"errors"
	"os"
	"reflect"
	"testing"
	"time"

	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestPod(t *testing.T) {
	labels := map[string]string{"app": "x"}
	for _, tc := range []struct {
		name string
		got  *corev1.Pod
		want *corev1.Pod
	}{
		{"name and rv", Pod("a", "1"),
			&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a", ResourceVersion: "1"}}},
		{"no rv", Pod("a", ""),
			&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a"}}},
		{"namespace", Pod("a", "2", Namespace("other")),
			&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "other", Name: "a", ResourceVersion: "2"}}},
		{"no namespace", Pod("x/y", "", Namespace("")),
			&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "x/y"}}},
		{"labels and node", Pod("a", "", Labels(labels), Node("n1")),
			&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a", Labels: labels}, Spec: corev1.PodSpec{NodeName: "n1"}}},
		{"func, after the others", Pod("a", "1", Namespace("b"), PodFunc(func(p *corev1.Pod) { p.Namespace += "c" })),
			&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "bc", Name: "a", ResourceVersion: "1"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !equality.Semantic.DeepEqual(tc.got, tc.want) {
				t.Errorf("got %+v, want %+v", tc.got, tc.want)
			}
		})
	}
	// Labels keeps the map it is given, nil and empty apart.
	if p := Pod("a", "", Labels(nil)); p.Labels != nil {
		t.Errorf("Labels(nil) gave %v", p.Labels)
	}
	if p := Pod("a", "", Labels{}); p.Labels == nil || len(p.Labels) != 0 {
		t.Errorf("Labels{} gave %#v, want an empty map", p.Labels)
	}
	if p := Pod("a", "", Labels(labels)); reflect.ValueOf(p.Labels).Pointer() != reflect.ValueOf(labels).Pointer() {
		t.Errorf("Labels(labels) gave a copy")
	}
}

func TestPods(t *testing.T) {
	objs := Pods("a", "b")
	if len(objs) != 2 {
		t.Fatalf("%d objects, want 2", len(objs))
	}
	for i, name := range []string{"a", "b"} {
		if !equality.Semantic.DeepEqual(objs[i], Pod(name, "")) {
			t.Errorf("object %d = %+v, want Pod(%q, \"\")", i, objs[i], name)
		}
	}
}

func TestTimeoutFrom(t *testing.T) {
	for _, tc := range []struct {
		env  string
		race bool
		want time.Duration
	}{
		{"", false, DefaultTimeout},
		{"", true, 3 * DefaultTimeout},
		{"2m", false, 2 * time.Minute},
		{"90s", true, 90 * time.Second},
	} {
		if got := timeoutFrom(tc.env, tc.race); got != tc.want {
			t.Errorf("timeoutFrom(%q, %v) = %v, want %v", tc.env, tc.race, got, tc.want)
		}
	}
	for _, env := range []string{"soon", "0s", "-1s", "10"} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("timeoutFrom(%q) did not panic", env)
				}
			}()
			timeoutFrom(env, false)
		}()
	}
	if want := timeoutFrom(os.Getenv(EnvTimeout), raceDetector); Timeout() != want {
		t.Errorf("Timeout() = %v, want %v", Timeout(), want)
	}
}

// fataler is a testing.TB whose Fatal and Fatalf panic with errFatal, so
// that a test can see a helper fail it.
type fataler struct{ testing.TB }

var errFatal = errors.New("fatal")

func (fataler) Helper()               {}
func (fataler) Fatal(...any)          { panic(errFatal) }
func (fataler) Fatalf(string, ...any) { panic(errFatal) }

// fails reports whether f called Fatal or Fatalf.
func fails(f func()) (failed bool) {
	defer func() {
		if r := recover(); r != nil {
			if r != errFatal {
				panic(r)
			}
			failed = true
		}
	}()
	f()
	return false
}

func TestRecv(t *testing.T) {
	w := watch.NewFake()
	defer w.Stop()
	go w.Add(Pod("a", "1"))
	if ev := Recv(t, w); ev.Type != watch.Added || ev.Object.(*corev1.Pod).Name != "a" {
		t.Errorf("Recv = %s %v", ev.Type, ev.Object)
	}

	// A watch that ends fails the test.
	closed := watch.NewFake()
	closed.Stop()
	if !fails(func() { Recv(fataler{t}, closed) }) {
		t.Error("Recv on an ended watch did not fail the test")
	}
}
