package kubeserver

import (
	"context"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/warmcache/warmcache/benchmarks/internal/measure"
	"github.com/warmcache/warmcache/internal/demo"
	"github.com/warmcache/warmcache/internal/podgen"
)

// progressInterval is how often createPods reports its progress.
const progressInterval = 5 * time.Second

// createPods creates podgen's pods 0 to n-1 in their namespaces, workers
// at a time, each by a create and a status update (a create resets a
// pod's status, which holds a third of a podgen pod's bytes), and reports
// its progress to w.
func createPods(ctx context.Context, cs kubernetes.Interface, n, workers int, w io.Writer) error {
	names := make([]string, 0, podgen.Namespaces)
	for i := range min(n, podgen.Namespaces) {
		ns, _ := podgen.Key(i)
		names = append(names, ns)
	}
	if err := demo.EnsureNamespaces(ctx, cs, names...); err != nil {
		return fmt.Errorf("%w: %w", ErrServer, err)
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	start := time.Now()
	var next, done atomic.Int64
	progress := measure.Every(progressInterval, func() {
		d := done.Load()
		fmt.Fprintf(w, "kubeserver: created %d of %d pods (%.0f/s)\n", d, n, float64(d)/time.Since(start).Seconds())
	})
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for ctx.Err() == nil {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				if err := createPod(ctx, cs, i); err != nil {
					cancel(err)
					return
				}
				done.Add(1)
			}
		})
	}
	wg.Wait()
	progress.Stop()
	if ctx.Err() != nil {
		return fmt.Errorf("%w: create pods: %w", ErrServer, context.Cause(ctx))
	}
	fmt.Fprintf(w, "kubeserver: created %d pods in %v\n", n, time.Since(start).Round(time.Second))
	return nil
}

// createPod creates podgen's pod i and sets its status to podgen's.
func createPod(ctx context.Context, cs kubernetes.Interface, i int) error {
	p := demo.NewPod(i, "")
	created, err := cs.CoreV1().Pods(p.Namespace).Create(ctx, p, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("create pod %s/%s: %w", p.Namespace, p.Name, err)
	}
	created.Status = p.Status
	if _, err := cs.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("set the status of pod %s/%s: %w", p.Namespace, p.Name, err)
	}
	return nil
}
