package kubeserver

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/warmcache/warmcache/benchmarks/internal/apiproc"
	"github.com/warmcache/warmcache/benchmarks/internal/genserver"
	"github.com/warmcache/warmcache/internal/httpjson"
	"github.com/warmcache/warmcache/internal/podgen"
)

// The helper is this program started again (see MaybeServe): a process of
// its own that makes the updates through the API and runs the proxy, so
// that neither the writers' CPU (each update's request and the pod it
// returns) nor the proxy's counts as the informers'.

// envHelper is the environment variable that makes a process the helper;
// its value is the helperConfig, in JSON.
const envHelper = "WARMCACHE_BENCH_KUBE_HELPER"

// helperConfig is what the helper needs of the server.
type helperConfig struct {
	// Host, Token and CAData reach kube-apiserver.
	Host   string `json:"host"`
	Token  string `json:"token"`
	CAData []byte `json:"caData"`
	// Upstream is kube-apiserver's address, which the proxy forwards to.
	Upstream string `json:"upstream"`
	// Pods is the number of podgen pods the server holds.
	Pods int `json:"pods"`
	// Workers is the number of concurrent updates.
	Workers int `json:"workers"`
}

// sequenceAnnotation is the annotation each update of a churn sets to the
// churn's generation and the update's number.
const sequenceAnnotation = "bench.warmcache.io/update"

// writerUserAgent is the User-Agent of the helper's updates.
const writerUserAgent = "informerbench-writer"

// MaybeServe makes this process the helper when Start started it, and then
// exits; otherwise it returns at once. Call it first in main and TestMain,
// beside apiproc.MaybeServe.
func MaybeServe() {
	apiproc.RunChild(envHelper, "kubeserver", func(c helperConfig, in io.Reader, out io.Writer) error {
		if err := serveHelper(c, in, out); err != nil {
			return fmt.Errorf("helper: %w", err)
		}
		return nil
	})
}

// helper serves the control API of the writers and the proxy.
type helper struct {
	c     helperConfig
	cs    kubernetes.Interface
	proxy *proxy
	// mu serialises churns.
	mu sync.Mutex
}

func serveHelper(c helperConfig, in io.Reader, out io.Writer) error {
	gone := apiproc.ParentGone(in)
	cfg := &rest.Config{
		Host:            c.Host,
		BearerToken:     c.Token,
		TLSClientConfig: rest.TLSClientConfig{CAData: c.CAData},
		ContentConfig:   rest.ContentConfig{ContentType: "application/vnd.kubernetes.protobuf"},
		UserAgent:       writerUserAgent,
		QPS:             -1,
		WarningHandler:  rest.NoWarnings{},
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	p, err := newProxy(c.Upstream)
	if err != nil {
		return err
	}
	defer p.Shutdown()
	h := &helper{c: c, cs: cs, proxy: p}
	mux := http.NewServeMux()
	mux.HandleFunc(genserver.ControlPrefix+"proxy", func(w http.ResponseWriter, _ *http.Request) {
		httpjson.Write(w, proxyAddr{Addr: p.Addr()})
	})
	mux.HandleFunc(genserver.ControlPrefix+"close", func(w http.ResponseWriter, _ *http.Request) {
		p.Close()
		httpjson.Write(w, struct{}{})
	})
	mux.HandleFunc(genserver.ControlPrefix+"open", func(w http.ResponseWriter, _ *http.Request) {
		p.Open()
		httpjson.Write(w, struct{}{})
	})
	mux.HandleFunc(genserver.ControlPrefix+"churn", h.churn)
	return apiproc.ServeLoopback(mux, out, gone, p.Open)
}

type proxyAddr struct {
	Addr string `json:"addr"`
}

// churn makes the updates of a churn request (updates, gen, hot: as
// apiproc's servers read them), Workers at a time, and answers once the
// server has acknowledged the last.
func (h *helper) churn(w http.ResponseWriter, r *http.Request) {
	h.mu.Lock()
	defer h.mu.Unlock()
	q := r.URL.Query()
	n, err1 := strconv.Atoi(q.Get("updates"))
	gen, err2 := strconv.ParseUint(q.Get("gen"), 10, 32)
	hot, err3 := genserver.OptionalInt(q.Get("hot"))
	if err1 != nil || err2 != nil || err3 != nil || n <= 0 || gen == 0 {
		http.Error(w, "updates and gen must be positive numbers, hot a number", http.StatusBadRequest)
		return
	}
	order, err := genserver.NewChurnOrder(h.c.Pods, hot)
	if err != nil {
		http.Error(w, fmt.Sprintf("hot set of %d pods: want 0 (every pod) to %d", hot, h.c.Pods), http.StatusBadRequest)
		return
	}
	res, err := h.update(r.Context(), n, int(gen), order)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	httpjson.Write(w, res)
}

// update makes n updates in order, setting the generation annotation to
// gen, with Workers concurrent requests.
func (h *helper) update(ctx context.Context, n, gen int, order genserver.ChurnOrder) (apiproc.ChurnResult, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	// Each update sets the churn's generation and its own sequence number:
	// an update that changed nothing would write nothing, and tell the
	// watchers nothing.
	patchOf := func(k int) []byte {
		return []byte(fmt.Sprintf(`{"metadata":{"annotations":{%q:%q,%q:"%d-%d"}}}`,
			apiproc.GenerationAnnotation, strconv.Itoa(gen), sequenceAnnotation, gen, k))
	}
	var next atomic.Int64
	var first, last atomic.Int64
	first.Store(-1)
	start := time.Now()
	var wg sync.WaitGroup
	for range max(1, h.c.Workers) {
		wg.Go(func() {
			for ctx.Err() == nil {
				k := int(next.Add(1)) - 1
				if k >= n {
					return
				}
				ns, name := podgen.Key(order.Index(k))
				p, err := h.cs.CoreV1().Pods(ns).Patch(ctx, name, types.MergePatchType, patchOf(k), metav1.PatchOptions{})
				if err != nil {
					cancel(fmt.Errorf("update pod %s/%s: %w", ns, name, err))
					return
				}
				rv, err := strconv.ParseInt(p.ResourceVersion, 10, 64)
				if err != nil {
					cancel(fmt.Errorf("update pod %s/%s: resourceVersion %q: %w", ns, name, p.ResourceVersion, err))
					return
				}
				if k == 0 {
					first.Store(rv)
				}
				for {
					if l := last.Load(); rv <= l || last.CompareAndSwap(l, rv) {
						break
					}
				}
			}
		})
	}
	wg.Wait()
	if ctx.Err() != nil {
		return apiproc.ChurnResult{}, context.Cause(ctx)
	}
	return apiproc.ChurnResult{
		FirstRV: strconv.FormatInt(first.Load(), 10),
		LastRV:  strconv.FormatInt(last.Load(), 10),
		Seconds: time.Since(start).Seconds(),
	}, nil
}
