package reflector_test

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/warmcache/warmcache/internal/fakesource"
	"github.com/warmcache/warmcache/reflector"
)

// printSink prints what the reflector pushes and reports each live event
// on events.
type printSink struct{ events chan string }

func name(obj interface{}) string {
	acc, _ := meta.Accessor(obj)
	return acc.GetName() + "@" + acc.GetResourceVersion()
}

func (s printSink) live(verb string, obj interface{}) error {
	fmt.Println(verb, name(obj))
	s.events <- name(obj)
	return nil
}
func (s printSink) Add(_ context.Context, obj interface{}) error    { return s.live("Add", obj) }
func (s printSink) Update(_ context.Context, obj interface{}) error { return s.live("Update", obj) }
func (s printSink) Delete(_ context.Context, obj interface{}) error { return s.live("Delete", obj) }
func (s printSink) Bookmark(_ context.Context, rv string) error {
	fmt.Println("Bookmark", rv)
	return nil
}
func (s printSink) BeginReplace(context.Context) error { fmt.Println("BeginReplace"); return nil }
func (s printSink) ReplacePage(_ context.Context, objs []interface{}) error {
	var names []string
	for _, o := range objs {
		names = append(names, name(o))
	}
	fmt.Println("ReplacePage", names)
	return nil
}
func (s printSink) EndReplace(_ context.Context, rv string) error {
	fmt.Println("EndReplace", rv)
	return nil
}
func (s printSink) MarkSynced(context.Context) error { fmt.Println("MarkSynced"); return nil }

func Example() {
	src, _ := fakesource.New(fakesource.Options{})
	for _, n := range []string{"a", "b"} {
		_, _ = src.Add(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: n}})
	}
	pods := src.Endpoint(corev1.SchemeGroupVersion.WithKind("Pod"), "")
	sink := printSink{events: make(chan string)}

	// A warm start from RV 2: the store already holds pod a. The server
	// is at RV 3, so the one LIST (limit 1) that checks the stored RV
	// finds it behind, not ahead: the watch resumes, and the warm start
	// is synced once the watch has delivered RV 3.
	r, err := reflector.New(pods, &corev1.Pod{}, sink, reflector.Options{
		ResumeFrom: func() (string, bool) { return "2", true },
	})
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.Run(ctx)
	}()
	<-sink.events // b, replayed from the watch
	cancel()
	<-done
	fmt.Println("last RV:", r.LastSyncResourceVersion(), "lists:", src.Stats().Lists)
	// Output:
	// Add b@3
	// MarkSynced
	// last RV: 3 lists: 1
}
