package informer

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/textlogger"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/warmcache/warmcache/internal/testkit"
)

// lockedBuffer is a bytes.Buffer safe for concurrent use.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// noCrash turns utilruntime.ReallyCrash off for the test, so that a
// handler's panic is logged and skipped, as client-go's tests do. Call it
// before the informer starts: its cleanup must run after the handlers'
// goroutines have ended.
func noCrash(t *testing.T) {
	old := utilruntime.ReallyCrash
	utilruntime.ReallyCrash = false
	t.Cleanup(func() { utilruntime.ReallyCrash = old })
}

// A handler that panicked gets its next notification a second later, on
// the informer's clock (client-go's processorListener pauses too); the
// panic is logged with client-go's wording through the handler's logger,
// attributed to the panicking code, and the initial add still counts as
// delivered.
func TestHandlerPanicLoggedThenPaused(t *testing.T) {
	noCrash(t)
	clk := testingclock.NewFakeClock(time.Now())
	inf := newTestInformer(t, Options{Clock: clk})
	var out lockedBuffer
	logger := klog.LoggerWithName(textlogger.NewLogger(textlogger.NewConfig(textlogger.Output(&out))), "my-handler")
	got := make(chan string, 10)
	reg, err := inf.AddEventHandlerWithOptions(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj interface{}) {
			if obj.(*corev1.Pod).Name == "a" {
				panic("boom")
			}
			got <- describeObj(obj)
		},
	}, cache.HandlerOptions{Logger: &logger})
	if err != nil {
		t.Fatal(err)
	}
	_, _, panicLine, _ := runtime.Caller(0)
	panicLine -= 8
	h := startHarness(t, inf)
	h.relist("10", testkit.Pod("a", "1"), testkit.Pod("b", "2"))

	// The listener waits on the clock after the panic: b is held back.
	err = wait.PollUntilContextTimeout(context.Background(), time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return clk.Waiters() == 1, nil
	})
	if err != nil {
		t.Fatalf("no pause after the panic (clock waiters %d)", clk.Waiters())
	}
	want := fmt.Sprintf(`panic_test.go:%d] "Observed a panic" logger="my-handler" panic="boom"`, panicLine)
	if log := out.String(); !strings.Contains(log, want) {
		t.Fatalf("panic log lacks %q:\n%s", want, log)
	}
	clk.Step(crashPause - time.Millisecond)
	if n := clk.Waiters(); n != 1 {
		t.Fatalf("pause ended before %v (clock waiters %d)", crashPause, n)
	}
	select {
	case e := <-got:
		t.Fatalf("%s delivered during the pause", e)
	default:
	}
	clk.Step(time.Millisecond)
	if e := <-got; e != "ns/b@2" {
		t.Fatalf("after the pause got %s, want ns/b@2", e)
	}
	<-reg.HasSyncedChecker().Done()
}

// A listener stopped during its pause returns without waiting it out.
func TestListenerStopEndsPause(t *testing.T) {
	noCrash(t)
	clk := testingclock.NewFakeClock(time.Now())
	var out lockedBuffer
	logger := textlogger.NewLogger(textlogger.NewConfig(textlogger.Output(&out)))
	delivered := make(chan struct{}, 2)
	l := newListener(logger, cache.ResourceEventHandlerFuncs{AddFunc: func(interface{}) {
		delivered <- struct{}{}
		panic("boom")
	}}, "test", 0, 0, clk)
	var wg sync.WaitGroup
	l.start(&wg)
	l.add(note{kind: noteAdd, new: testkit.Pod("a", "1")})
	l.add(note{kind: noteAdd, new: testkit.Pod("b", "2")})
	<-delivered
	if err := wait.PollUntilContextTimeout(context.Background(), time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return clk.Waiters() == 1, nil
	}); err != nil {
		t.Fatal("no pause after the panic")
	}
	l.stop()
	wg.Wait()
	if len(delivered) != 0 {
		t.Fatal("a notification was delivered after stop")
	}
}

// Calls a stopped or started informer refuses fail with client-go's words,
// and match the package's sentinels.
func TestStoppedAndStartedErrorsWordedAsClientGo(t *testing.T) {
	inf := newTestInformer(t, Options{})
	h := startHarness(t, inf)
	if err := inf.SetTransform(nil); !errors.Is(err, ErrStarted) || !strings.HasSuffix(err.Error(), "informer has already started") {
		t.Fatalf("SetTransform after start: %v", err)
	}
	h.stop()
	_, err := inf.AddEventHandler(newRecorder())
	if !errors.Is(err, ErrStopped) || !strings.HasSuffix(err.Error(), "was not added to shared informer because it has stopped already") {
		t.Fatalf("AddEventHandler after stop: %v", err)
	}
	err = inf.AddIndexers(cache.Indexers{"x": cache.MetaNamespaceIndexFunc})
	if !errors.Is(err, ErrStopped) || !strings.HasSuffix(err.Error(), "indexer was not added because it has stopped already") {
		t.Fatalf("AddIndexers after stop: %v", err)
	}
}
