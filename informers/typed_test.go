package informers

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
)

// nilCoreV1 is a kubernetes.Interface whose CoreV1 accessor returns nil.
type nilCoreV1 struct{ kubernetes.Interface }

func (nilCoreV1) CoreV1() corev1client.CoreV1Interface { return nil }

// nilPods is a kubernetes.Interface whose CoreV1().Pods and Nodes return nil.
type nilPods struct{ kubernetes.Interface }

func (c nilPods) CoreV1() corev1client.CoreV1Interface { return nilPodsV1{c.Interface.CoreV1()} }

type nilPodsV1 struct{ corev1client.CoreV1Interface }

func (nilPodsV1) Pods(string) corev1client.PodInterface { return nil }
func (nilPodsV1) Nodes() corev1client.NodeInterface     { return nil }

// The generated table's typed clients list through the accessors of the
// client, in the namespace asked for (namespaced resources) or across all
// (cluster-scoped ones), and an accessor returning nil is an error naming
// it.
func TestTypedClientOpen(t *testing.T) {
	meta := func(ns, name string) metav1.ObjectMeta { return metav1.ObjectMeta{Namespace: ns, Name: name} }
	client := fake.NewClientset(
		&corev1.Pod{ObjectMeta: meta("a", "p1")}, &corev1.Pod{ObjectMeta: meta("b", "p2")},
		&corev1.Node{ObjectMeta: meta("", "n1")},
	)
	cases := []struct {
		name      string
		list      reflect.Type
		client    kubernetes.Interface
		namespace string
		want      []string // names listed
		wantErr   string   // accessor named in the error wrapping ErrNoTypedClient
	}{
		{name: "namespaced", list: reflect.TypeFor[*corev1.PodList](), client: client, namespace: "a", want: []string{"p1"}},
		{name: "namespaced, all", list: reflect.TypeFor[*corev1.PodList](), client: client, want: []string{"p1", "p2"}},
		{name: "cluster-scoped", list: reflect.TypeFor[*corev1.NodeList](), client: client, namespace: "a", want: []string{"n1"}},
		{name: "nil group", list: reflect.TypeFor[*corev1.PodList](), client: nilCoreV1{client}, wantErr: "CoreV1()"},
		{name: "nil namespaced resource", list: reflect.TypeFor[*corev1.PodList](), client: nilPods{client}, wantErr: "CoreV1().Pods()"},
		{name: "nil cluster-scoped resource", list: reflect.TypeFor[*corev1.NodeList](), client: nilPods{client}, wantErr: "CoreV1().Nodes()"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			typed, ok := typedClientOf(tc.list)
			if !ok {
				t.Fatalf("no typed client for %v", tc.list)
			}
			list, watchFn, err := typed.open(tc.client, tc.namespace)
			if tc.wantErr != "" {
				if !errors.Is(err, ErrNoTypedClient) || !strings.HasSuffix(err.Error(), "."+tc.wantErr+" returned nil") {
					t.Fatalf("open: %v, want an error wrapping ErrNoTypedClient naming %s", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			obj, err := list(context.Background(), metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			switch l := obj.(type) {
			case *corev1.PodList:
				for _, p := range l.Items {
					names = append(names, p.Name)
				}
			case *corev1.NodeList:
				for _, n := range l.Items {
					names = append(names, n.Name)
				}
			default:
				t.Fatalf("list returned %T", obj)
			}
			if !reflect.DeepEqual(names, tc.want) {
				t.Errorf("listed %v, want %v", names, tc.want)
			}
			w, err := watchFn(context.Background(), metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			w.Stop()
		})
	}
}
