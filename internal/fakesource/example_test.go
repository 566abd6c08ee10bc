package fakesource_test

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/warmcache/warmcache/internal/fakesource"
)

func Example() {
	src, err := fakesource.New(fakesource.Options{})
	if err != nil {
		panic(err)
	}
	pods := src.Endpoint(corev1.SchemeGroupVersion.WithKind("Pod"), "")
	for _, name := range []string{"a", "b"} {
		if _, err := src.Add(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}}); err != nil {
			panic(err)
		}
	}

	list, err := pods.List(metav1.ListOptions{Limit: 1})
	if err != nil {
		panic(err)
	}
	pl := list.(*corev1.PodList)
	fmt.Println("page 1:", pl.Items[0].Name, "at RV", pl.ResourceVersion, "more:", pl.Continue != "")

	w, err := pods.Watch(metav1.ListOptions{ResourceVersion: pl.ResourceVersion, AllowWatchBookmarks: true})
	if err != nil {
		panic(err)
	}
	if _, err := src.Delete(&pl.Items[0]); err != nil {
		panic(err)
	}
	ev := <-w.ResultChan()
	fmt.Println(ev.Type, ev.Object.(*corev1.Pod).Name, ev.Object.(*corev1.Pod).ResourceVersion)
	w.Stop()

	// After a restart, the old RV is gone.
	src.Restart()
	_, err = pods.List(metav1.ListOptions{Limit: 1, Continue: pl.Continue})
	fmt.Println("continue after restart expired:", apierrors.IsResourceExpired(err))
	// Output:
	// page 1: a at RV 3 more: true
	// DELETED a 4
	// continue after restart expired: true
}
