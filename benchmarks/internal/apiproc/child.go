package apiproc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime/debug"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/warmcache/warmcache/benchmarks/internal/genserver"
	"github.com/warmcache/warmcache/internal/fakeapi"
	"github.com/warmcache/warmcache/internal/fakesource"
	"github.com/warmcache/warmcache/internal/httpjson"
	"github.com/warmcache/warmcache/internal/podgen"
)

// GenerationAnnotation is the annotation Churn sets on updated pods.
const GenerationAnnotation = "bench.warmcache.io/generation"

var podGVK = corev1.SchemeGroupVersion.WithKind("Pod")

// MaybeServe makes this process the server when it was started by Start,
// and then exits; otherwise it returns at once. Call it first in main and
// TestMain.
func MaybeServe() {
	v, ok := os.LookupEnv(envPods)
	if !ok {
		return
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		fmt.Fprintf(os.Stderr, "apiproc: %s=%q is not a positive number\n", envPods, v)
		os.Exit(2)
	}
	serveFn := serve
	if os.Getenv(envServer) == ServerGen {
		serveFn = serveGen
	}
	if err := serveFn(n, os.Stdin, os.Stdout); err != nil && !errors.Is(err, errParentGone) {
		fmt.Fprintln(os.Stderr, "apiproc:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// RunChild makes this process a child, and then exits, when the
// environment variable env holds its spec as JSON (as a parent that
// starts it with StartChild or its own command sets it): it calls run with
// the spec and the process's standard input and output, and exits with 2
// if the spec does not decode, 1 if run fails, 0 otherwise, writing the
// error to standard error after name. Without env it returns at once. Call
// it first in main and TestMain.
func RunChild[S any](env, name string, run func(spec S, in io.Reader, out io.Writer) error) {
	v, ok := os.LookupEnv(env)
	if !ok {
		return
	}
	var spec S
	if err := json.Unmarshal([]byte(v), &spec); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %s: %v\n", name, env, err)
		os.Exit(2)
	}
	if err := run(spec, os.Stdin, os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		os.Exit(1)
	}
	os.Exit(0)
}

// errParentGone is returned by serve when its input closed before it
// served.
var errParentGone = errors.New("the parent closed the input before the server started")

// serve runs the server with n pods, writes its URL to out and serves
// until in reaches EOF.
func serve(n int, in io.Reader, out io.Writer) error {
	gone := ParentGone(in)
	src, err := fakesource.New(fakesource.Options{})
	if err != nil {
		return err
	}
	c := &child{src: src, keys: make([]podKey, n)}
	for i := range n {
		if i%1000 == 0 {
			select {
			case <-gone:
				return errParentGone
			default:
			}
		}
		p := podgen.Pod(i)
		c.keys[i] = podKey{p.Namespace, p.Name}
		if _, err := src.Add(p); err != nil {
			return err
		}
	}
	h, err := fakeapi.NewHandler(fakeapi.Options{Source: src})
	if err != nil {
		return err
	}
	c.gate = &gate{}
	mux := http.NewServeMux()
	mux.HandleFunc(genserver.ControlPrefix+"churn", c.churn)
	mux.HandleFunc(genserver.ControlPrefix+"open", c.open)
	mux.HandleFunc(genserver.ControlPrefix+"compact", c.compact)
	mux.HandleFunc(genserver.ControlPrefix+"restart", c.restart)
	mux.HandleFunc(genserver.ControlPrefix+"stats", c.stats)
	mux.Handle("/", c.gate.wrap(h))
	return ServeLoopback(mux, out, gone, c.gate.Open)
}

// ParentGone returns a channel closed once in, a child's standard input
// that its parent never writes, reaches EOF or fails: the parent is done
// or dead.
func ParentGone(in io.Reader) <-chan struct{} {
	gone := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, in)
		close(gone)
	}()
	return gone
}

// ServeLoopback serves h on a loopback port, writes its URL as a line to
// out and serves until gone is closed; then it calls release, which must
// let every held request end, and shuts the server down (at most 5s).
func ServeLoopback(h http.Handler, out io.Writer, gone <-chan struct{}, release func()) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: h}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	if _, err := fmt.Fprintf(out, "http://%s\n", ln.Addr()); err != nil {
		return errors.Join(err, srv.Close())
	}
	<-gone
	release()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(ctx)
	_ = srv.Close()
	<-errc
	return nil
}

type podKey struct{ namespace, name string }

type child struct {
	src  *fakesource.Source
	keys []podKey
	gate *gate
	// mu serialises control requests and guards restarts.
	mu       sync.Mutex
	restarts int
}

func fail(w http.ResponseWriter, code int, format string, args ...interface{}) {
	http.Error(w, fmt.Sprintf(format, args...), code)
}

// churnQuery parses the parameters of a churn request, the same for both
// servers: updates and gen positive (gen a uint32, a generation), hot
// optional (0). It answers 400 and returns false when they are not.
func churnQuery(w http.ResponseWriter, r *http.Request) (n, gen, hot int, ok bool) {
	q := r.URL.Query()
	n, err1 := strconv.Atoi(q.Get("updates"))
	g, err2 := strconv.ParseUint(q.Get("gen"), 10, 32)
	hot, err3 := genserver.OptionalInt(q.Get("hot"))
	if err1 != nil || err2 != nil || err3 != nil || n <= 0 || g == 0 {
		fail(w, http.StatusBadRequest, "updates and gen must be positive numbers, hot a number")
		return 0, 0, 0, false
	}
	return n, int(g), hot, true
}

func (c *child) churn(w http.ResponseWriter, r *http.Request) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n, gen, hot, ok := churnQuery(w, r)
	if !ok {
		return
	}
	// The genserver's order, so that both servers churn the same pods.
	order, err := genserver.NewChurnOrder(len(c.keys), hot)
	if err != nil {
		fail(w, http.StatusBadRequest, "%s: hot set of %d pods: want 0 (every pod) to %d", ServerFake, hot, len(c.keys))
		return
	}
	c.gate.Close()
	start := time.Now()
	var res ChurnResult
	for k := range n {
		key := c.keys[order.Index(k)]
		obj, ok := c.src.Get(podGVK, key.namespace, key.name)
		if !ok {
			fail(w, http.StatusInternalServerError, "pod %s/%s vanished", key.namespace, key.name)
			return
		}
		p := obj.(*corev1.Pod)
		if p.Annotations == nil {
			p.Annotations = map[string]string{}
		}
		p.Annotations[GenerationAnnotation] = strconv.Itoa(gen)
		rv, err := c.src.Update(p)
		if err != nil {
			fail(w, http.StatusInternalServerError, "update: %v", err)
			return
		}
		if k == 0 {
			res.FirstRV = rv
		}
		res.LastRV = rv
	}
	res.Seconds = time.Since(start).Seconds()
	httpjson.Write(w, res)
}

func (c *child) open(w http.ResponseWriter, _ *http.Request) {
	c.gate.Open()
	httpjson.Write(w, struct{}{})
}

func (c *child) compact(w http.ResponseWriter, r *http.Request) {
	c.mu.Lock()
	defer c.mu.Unlock()
	rv := r.URL.Query().Get("rv")
	if rv == "" {
		rv = c.src.ResourceVersion()
	}
	if err := c.src.Compact(rv); err != nil {
		fail(w, http.StatusBadRequest, "%v", err)
		return
	}
	// Give the memory of the dropped history back, so that the
	// machine's memory is not held by a benchmark's past phases.
	debug.FreeOSMemory()
	httpjson.Write(w, struct{}{})
}

// restart simulates an apiserver restart: every open watch ends and the
// whole history is compacted, so that a watch resuming from an older
// resourceVersion gets 410 Expired and the informer relists. A ConfigMap,
// which no pod watch sees, is written first, so that the compaction passes
// the resourceVersion of a pod informer even when no pod changed.
func (c *child) restart(w http.ResponseWriter, _ *http.Request) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.restarts++
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: fmt.Sprintf("restart-%d", c.restarts)}}
	if _, err := c.src.Add(cm); err != nil {
		fail(w, http.StatusInternalServerError, "add: %v", err)
		return
	}
	c.src.Restart()
	debug.FreeOSMemory()
	httpjson.Write(w, struct{}{})
}

func (c *child) stats(w http.ResponseWriter, _ *http.Request) {
	st := c.src.Stats()
	httpjson.Write(w, Stats{
		ResourceVersion: strconv.FormatInt(st.ResourceVersion, 10),
		Lists:           st.Lists,
		Watches:         st.Watches,
		WatchLists:      st.WatchLists,
		OpenWatches:     st.OpenWatches,
	})
}
