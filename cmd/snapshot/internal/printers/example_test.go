package printers_test

import (
	"fmt"
	"os"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/warmcache/warmcache/cmd/snapshot/internal/printers"
)

func ExampleNew() {
	now := time.Date(2026, 1, 3, 0, 0, 0, 0, time.UTC)
	pods := []runtime.Object{
		&corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "web", Name: "web-0", CreationTimestamp: metav1.NewTime(now.Add(-time.Hour))},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app"}}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{
				Name: "app", Ready: true, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}},
			}}},
		},
	}
	objs := func(yield func(runtime.Object, error) bool) {
		for _, p := range pods {
			if !yield(p, nil) {
				return
			}
		}
	}
	for _, format := range []string{printers.Table, printers.Name} {
		p, err := printers.New(printers.Options{
			Format:          format,
			Kind:            schema.GroupVersionKind{Version: "v1", Kind: "Pod"},
			NamespaceColumn: true,
			Now:             func() time.Time { return now },
		})
		if err != nil {
			fmt.Println(err)
			return
		}
		if err := p.Print(os.Stdout, objs); err != nil {
			fmt.Println(err)
		}
	}
	_, err := printers.New(printers.Options{Format: "xml"})
	fmt.Println(err)
	// Output:
	// NAMESPACE   NAME    READY   STATUS    RESTARTS   AGE
	// web         web-0   1/1     Running   0          60m
	// pod/web-0
	// unknown output format "xml": allowed formats are table, wide, json, yaml, name
}
