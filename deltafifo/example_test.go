package deltafifo_test

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/warmcache/warmcache/deltafifo"
)

// pod returns the pod ns/name at resourceVersion rv. The examples make
// their objects themselves, so that each reads on its own.
func pod(name, rv string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, ResourceVersion: rv}}
}

// A producer pushes watch events and a bookmark; the consumer pops batches
// and persists each batch's safe resourceVersion with it.
func Example() {
	ctx := context.Background()
	q, err := deltafifo.New(deltafifo.Options{})
	if err != nil {
		panic(err)
	}
	// Producer (a reflector, normally on its own goroutine).
	_ = q.Add(ctx, pod("a", "11"))
	_ = q.Add(ctx, pod("b", "12"))
	_ = q.Update(ctx, pod("a", "13"))
	_ = q.Bookmark(ctx, "20")
	q.Close()

	// Consumer (an informer).
	for {
		b, err := q.Pop(ctx, 1)
		if errors.Is(err, deltafifo.ErrClosed) {
			return
		}
		for i, key := range b.Keys {
			for _, d := range b.Deltas[i] {
				fmt.Printf("%s %s (rv %s)\n", d.Type, key, d.Object.(interface{ GetResourceVersion() string }).GetResourceVersion())
			}
		}
		fmt.Println("persist rv", b.ResourceVersion)
	}
	// Output:
	// Added ns/a (rv 11)
	// Updated ns/a (rv 13)
	// persist rv 11
	// Added ns/b (rv 12)
	// persist rv 20
}

// A relist is pushed as a begin marker, pages and an end marker carrying
// the list's resourceVersion; the consumer stages the pages and commits.
func ExampleQueue_BeginReplace() {
	ctx := context.Background()
	q, _ := deltafifo.New(deltafifo.Options{})
	_ = q.BeginReplace(ctx)
	_ = q.ReplacePage(ctx, []interface{}{pod("a", "3"), pod("b", "5")})
	_ = q.ReplacePage(ctx, []interface{}{pod("c", "4")})
	_ = q.EndReplace(ctx, "9")
	_ = q.Delete(ctx, cache.DeletedFinalStateUnknown{Key: "ns/b"})
	q.Close()

	for {
		b, err := q.Pop(ctx, 100)
		if err != nil {
			break
		}
		switch b.Kind {
		case deltafifo.KindReplaceBegin:
			fmt.Println("begin store replace; initial list:", b.IsInInitialList)
		case deltafifo.KindReplacePage:
			fmt.Println("stage", len(b.Objects), "objects")
		case deltafifo.KindReplaceEnd:
			fmt.Println("commit at rv", b.ResourceVersion, "; synced:", q.HasSynced())
		case deltafifo.KindDeltas:
			fmt.Println("apply", b.Keys, "and persist rv", b.ResourceVersion)
		}
	}
	// Output:
	// begin store replace; initial list: true
	// stage 2 objects
	// stage 1 objects
	// commit at rv 9 ; synced: true
	// apply [ns/b] and persist rv 9
}
