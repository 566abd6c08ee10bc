package informer

// Ports of client-go's TestEventPanics (tools/cache/shared_informer_test.go)
// and TestPanicPropagated (tools/cache/controller_test.go) at v0.36.3, on
// the memory store (a handler's panic does not involve the store).
//
// Adapted: TestEventPanics measures the one-second pause after each panic
// in real time (four seconds for five pods); here the informer runs on a
// fake clock, and the test checks that both handlers wait on it after each
// panic, then steps it. TestPanicPropagated runs client-go's NewInformer,
// whose handlers run on Run's goroutine, and recovers the panic from Run;
// a shared informer's handlers run on goroutines of their own, so a
// panicking handler (utilruntime.ReallyCrash on, the default) crashes the
// process, as client-go's shared informer does. The test runs the
// informer in a child process and checks that it dies of that panic.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
	fcache "k8s.io/client-go/tools/cache/testing"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/textlogger"
	testingclock "k8s.io/utils/clock/testing"
)

func TestClientGoEventPanics(t *testing.T) {
	// Initialized by init.
	var (
		buffer *lockedBuffer
		logger klog.Logger
	)

	init := func(t *testing.T) *fcache.FakeControllerSource {
		t.Cleanup(klog.CaptureState().Restore) //nolint:logcheck // as client-go's test
		buffer = &lockedBuffer{}
		logger = textlogger.NewLogger(textlogger.NewConfig(textlogger.Output(buffer)))
		noCrash(t)
		s := newFakeControllerSource(t)
		s.Add(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pod1"}})
		return s
	}

	newHandler := func(ctx context.Context) cache.ResourceEventHandlerFuncs {
		logger := klog.FromContext(ctx)
		return cache.ResourceEventHandlerFuncs{
			AddFunc: func(obj any) {
				logger.Info("Add func will panic now", "pod", klog.KObj(obj.(*v1.Pod)))
				panic("fake panic")
			},
		}
	}
	_, _, panicLine, _ := runtime.Caller(0)
	panicLine -= 4
	expectedLog := func(name string) string {
		if name == "" {
			return fmt.Sprintf(`clientgo_panic_test.go:%d] "Observed a panic" panic="fake panic"`, panicLine)
		}
		return fmt.Sprintf(`clientgo_panic_test.go:%d] "Observed a panic" logger=%q panic="fake panic"`, panicLine, name)
	}
	handler := newHandler(context.Background())

	t.Run("simple", func(t *testing.T) {
		source := init(t)
		klog.SetLogger(logger)
		// No Options.Logger: the informer logs to klog's global logger,
		// as client-go's does.
		informer, err := New(source, &v1.Pod{}, Options{Store: newMemStore(t), ResyncPeriod: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		handle, err := informer.AddEventHandler(handler)
		if err != nil {
			t.Fatal(err)
		}
		defer func() {
			if err := informer.RemoveEventHandler(handle); err != nil {
				t.Error(err)
			}
		}()
		stop := runUntil(t, informer)
		defer func() {
			stop()
			if !informer.IsStopped() {
				t.Error("informer has not stopped")
			}
		}()
		waitDone(t, "informer", informer.HasSyncedChecker())
		// Unlike client-go's (kubernetes#129024), the handler syncs:
		// an initial add counts as delivered when its handler panicked.
		waitDone(t, "handler", handle.HasSyncedChecker())
		if !strings.Contains(buffer.String(), expectedLog("")) {
			t.Errorf("handler has not panicked: log lacks %q:\n%s", expectedLog(""), buffer.String())
		}
	})

	t.Run("many", func(t *testing.T) {
		source := init(t)
		// One pod was already created in init, add some more.
		numPods := 5
		for i := 1; i < numPods; i++ {
			source.Add(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("pod%d", i+1)}})
		}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()

		clock := testingclock.NewFakeClock(time.Now())
		informerLogger := klog.LoggerWithName(logger, "informer")
		informer, err := New(source, &v1.Pod{}, Options{Store: newMemStore(t), ResyncPeriod: time.Second, Clock: clock, Logger: &informerLogger})
		if err != nil {
			t.Fatal(err)
		}
		name1 := "fake-event-handler-1"
		logger1 := klog.LoggerWithName(logger, name1)
		ctx1 := klog.NewContext(ctx, logger1)
		handle1, err := informer.AddEventHandlerWithOptions(newHandler(ctx1), cache.HandlerOptions{Logger: &logger1})
		if err != nil {
			t.Fatal(err)
		}
		defer func() {
			if err := informer.RemoveEventHandler(handle1); err != nil {
				t.Error(err)
			}
		}()
		name2 := "fake-event-handler-2"
		logger2 := klog.LoggerWithName(logger, name2)
		ctx2 := klog.NewContext(ctx, logger2)
		handle2, err := informer.AddEventHandlerWithOptions(newHandler(ctx2), cache.HandlerOptions{Logger: &logger2})
		if err != nil {
			t.Fatal(err)
		}
		defer func() {
			if err := informer.RemoveEventHandler(handle2); err != nil {
				t.Error(err)
			}
		}()

		stop := runUntil(t, informer)
		defer stop()
		waitDone(t, "informer", informer.HasSyncedChecker())

		// The tickers on the fake clock: resync, and the mutation
		// detector's when it is on.
		tickers := 1
		if informer.detector != nil {
			tickers++
		}
		counts := func() (int, int) {
			out := buffer.String()
			return numOccurrences(out, expectedLog(name1)), numOccurrences(out, expectedLog(name2))
		}
		for k := 1; k <= numPods; k++ {
			// Both handlers panic on the k-th pod...
			err := wait.PollUntilContextTimeout(ctx, time.Millisecond, wait.ForeverTestTimeout, true, func(context.Context) (bool, error) {
				n1, n2 := counts()
				return n1 >= k && n2 >= k, nil
			})
			if err != nil {
				n1, n2 := counts()
				t.Fatalf("after pod %d: %d and %d panics logged, want %d each:\n%s", k, n1, n2, k, buffer.String())
			}
			if k == numPods {
				break
			}
			// ... then both wait a second on the clock before the next.
			err = wait.PollUntilContextTimeout(ctx, time.Millisecond, wait.ForeverTestTimeout, true, func(context.Context) (bool, error) {
				return clock.Waiters() == tickers+2, nil
			})
			if err != nil {
				t.Fatalf("after pod %d: %d waiters on the clock, want %d (both handlers paused)", k, clock.Waiters(), tickers+2)
			}
			if n1, n2 := counts(); n1 != k || n2 != k {
				t.Fatalf("after pod %d: %d and %d panics logged during the pause, want %d each", k, n1, n2, k)
			}
			clock.Step(crashPause)
		}
		if n1, n2 := counts(); n1 != numPods || n2 != numPods {
			t.Fatalf("%d and %d panics logged, want %d each", n1, n2, numPods)
		}
	})
}

func numOccurrences(hay, needle string) int {
	return strings.Count(hay, needle)
}

// envPanicChild makes TestClientGoPanicPropagated the child process.
const envPanicChild = "WARMCACHE_INFORMER_PANIC_CHILD"

func TestClientGoPanicPropagated(t *testing.T) {
	if os.Getenv(envPanicChild) != "" {
		panicPropagatedChild(t)
		t.Fatal("the handler's panic did not crash the process")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestClientGoPanicPropagated$", "-test.count=1")
	cmd.Env = append(os.Environ(), envPanicChild+"=1")
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.Success() {
		t.Fatalf("child ended with %v, want a crash:\n%s", err, out)
	}
	if !strings.Contains(string(out), "panic: Just panic.") {
		t.Errorf("child did not die of the handler's panic:\n%s", out)
	}
}

// panicPropagatedChild is client-go's TestPanicPropagated on a shared
// informer: the panic ends the process.
func panicPropagatedChild(t *testing.T) {
	// source simulates an apiserver object endpoint.
	source := newFakeControllerSource(t)

	// Make an informer that just panics if the AddFunc is called.
	informer := newSharedInformer(t, cgStores[0], source, 100*time.Millisecond)
	if _, err := informer.AddEventHandler(cache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(obj interface{}, isInInitialList bool) {
			// Create a panic.
			panic("Just panic.")
		},
	}); err != nil {
		t.Fatal(err)
	}
	stop := runUntil(t, informer)
	defer stop()
	// Let's add a object to the source. It will trigger a panic.
	source.Add(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "test"}})
	// The panic ends the process before this wait does.
	ctx, cancel := context.WithTimeout(context.Background(), wait.ForeverTestTimeout)
	defer cancel()
	<-ctx.Done()
}
