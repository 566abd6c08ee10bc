package factory_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/warmcache/warmcache/factory"
	"github.com/warmcache/warmcache/internal/fakesource"
)

// A factory keeps every informer's cache in one bbolt file. The first run
// lists the pods (here one WatchList stream); the second starts warm, its
// pods from the file, and sends one LIST, the resume check, which reads
// the server's resourceVersion: a store of at most a page of objects (500,
// as here) is compared whole with that page, a larger one resumes its
// watch from the file's resourceVersion. fakesource stands in for a
// kube-apiserver; a controller passes Options.RESTConfig and calls
// ForResource instead of InformerFor.
func Example() {
	dir, _ := os.MkdirTemp("", "warmcache-example")
	defer os.RemoveAll(dir)
	src, _ := fakesource.New(fakesource.Options{})
	_, _ = src.Add(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "a"}})
	podsGVR := corev1.SchemeGroupVersion.WithResource("pods")
	lw := src.Endpoint(corev1.SchemeGroupVersion.WithKind("Pod"), "")

	for run := 1; run <= 2; run++ {
		before := len(src.Requests())
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		f, err := factory.New(ctx, factory.Options{Path: filepath.Join(dir, "cache.db")})
		if err != nil {
			panic(err)
		}
		inf, err := f.InformerFor(ctx, podsGVR, &corev1.Pod{}, lw, factory.Scope{}, nil)
		if err != nil {
			panic(err)
		}
		f.Start(ctx)
		f.WaitForCacheSync(ctx)
		fmt.Printf("run %d: %d pods; %s\n", run, len(inf.GetStore().ListKeys()), lists(src.Requests()[before:]))
		cancel()
		if err := f.Shutdown(); err != nil {
			panic(err)
		}
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
