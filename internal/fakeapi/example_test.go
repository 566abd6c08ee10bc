package fakeapi_test

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/warmcache/warmcache/internal/fakeapi"
	"github.com/warmcache/warmcache/internal/fakesource"
)

func Example() {
	src, err := fakesource.New(fakesource.Options{})
	if err != nil {
		panic(err)
	}
	if _, err := src.Add(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"}}); err != nil {
		panic(err)
	}
	ctx := context.Background()
	srv, err := fakeapi.Start(ctx, fakeapi.Options{Source: src})
	if err != nil {
		panic(err)
	}
	defer srv.Close()

	cs, err := kubernetes.NewForConfig(srv.Config("application/vnd.kubernetes.protobuf"))
	if err != nil {
		panic(err)
	}
	list, err := cs.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
	if err != nil {
		panic(err)
	}
	fmt.Println("listed", list.Items[0].Name, "at RV", list.ResourceVersion)

	w, err := cs.CoreV1().Pods("").Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
	if err != nil {
		panic(err)
	}
	defer w.Stop()
	if _, err := src.Delete(&list.Items[0]); err != nil {
		panic(err)
	}
	ev := <-w.ResultChan()
	fmt.Println(ev.Type == watch.Deleted, ev.Object.(*corev1.Pod).Name)
	// Output:
	// listed web at RV 2
	// true web
}
