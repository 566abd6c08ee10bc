package informers_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"

	"github.com/warmcache/warmcache/factory"
	"github.com/warmcache/warmcache/informers"
	"github.com/warmcache/warmcache/internal/fakeapi"
	"github.com/warmcache/warmcache/internal/fakesource"
)

// A controller written against client-go's SharedInformerFactory runs on
// a cache file. The first run lists the pods (here one WatchList stream);
// the second starts warm, its pods from the file, and sends one LIST, the
// resume check, which reads the server's resourceVersion (package factory's
// Example says more). fakeapi stands in for a kube-apiserver.
func Example() {
	dir, _ := os.MkdirTemp("", "warmcache-informers-example")
	defer os.RemoveAll(dir)
	src, _ := fakesource.New(fakesource.Options{})
	_, _ = src.Add(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "a"}})
	srv, _ := fakeapi.Start(context.Background(), fakeapi.Options{Source: src})
	defer srv.Close()
	client := kubernetes.NewForConfigOrDie(srv.Config(""))

	for run := 1; run <= 2; run++ {
		before := len(src.Requests())
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		wf, err := factory.New(ctx, factory.Options{Path: filepath.Join(dir, "cache.db")})
		if err != nil {
			panic(err)
		}
		f := informers.NewSharedInformerFactoryWithOptions(wf, client, 0, informers.WithNamespace("default"))
		pods := f.Core().V1().Pods()
		pods.Informer() // create the informer before Start
		f.Start(ctx.Done())
		for typ, synced := range f.WaitForCacheSync(ctx.Done()) {
			if !synced {
				panic(fmt.Sprintf("%v did not sync", typ))
			}
		}
		list, _ := pods.Lister().List(labels.Everything())
		fmt.Printf("run %d: %d pods; %s\n", run, len(list), lists(src.Requests()[before:]))
		cancel()
		f.Shutdown()
	}
	// Output:
	// run 1: 1 pods; a WatchList stream
	// run 2: 1 pods; a LIST (limit 500)
}

// lists says how the requests read the whole collection: WatchList streams
// and LISTs, each LIST with its limit.
func lists(reqs []fakesource.Request) string {
	var out []string
	for _, r := range reqs {
		switch {
		case r.Verb == "watch" && r.Options.SendInitialEvents != nil && *r.Options.SendInitialEvents:
			out = append(out, "a WatchList stream")
		case r.Verb == "list" && r.Options.Limit > 0:
			out = append(out, fmt.Sprintf("a LIST (limit %d)", r.Options.Limit))
		case r.Verb == "list":
			out = append(out, "a LIST")
		}
	}
	return strings.Join(out, ", ")
}
