// Package smallbench is what the two controllers of
// benchmarks/cmd/smallbench share: how they learn the apiserver, and how
// they report their cold or warm sync and their resident memory.
package smallbench

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"reflect"
	"time"

	"k8s.io/client-go/rest"

	"github.com/warmcache/warmcache/benchmarks/internal/procmem"
)

// Access is what a controller needs to reach the apiserver, written by the
// benchmark to a file whose path the controller gets with -access.
type Access struct {
	Host        string `json:"host"`
	BearerToken string `json:"bearerToken"`
	CAData      []byte `json:"caData"`
	Namespace   string `json:"namespace"`
}

// Config returns the rest.Config of a, as a kubeconfig gives it: no
// content type (client-go's default, JSON), client-go's default rate
// limits.
func (a Access) Config() *rest.Config {
	return &rest.Config{Host: a.Host, BearerToken: a.BearerToken, TLSClientConfig: rest.TLSClientConfig{CAData: a.CAData}}
}

// Report is what a controller prints on stdout, one JSON line, once its
// informer has synced and settled.
type Report struct {
	// Objects is the number of objects the lister lists once synced.
	Objects int `json:"objects"`
	// Sync is the time from the start of main to the synced informer.
	Sync time.Duration `json:"sync"`
	// Peak is VmHWM, the peak resident set, read when synced.
	Peak uint64 `json:"peak"`
	// SteadyAnon and SteadyFile are RssAnon and RssFile after Settle
	// without work.
	SteadyAnon uint64 `json:"steadyAnon"`
	SteadyFile uint64 `json:"steadyFile"`
}

// Flags are a controller's flags.
type Flags struct {
	Access Access
	// Cache is the cache file (warmcache).
	Cache string
	// Settle is the idle time before the steady resident set is read.
	Settle time.Duration
}

// Parse parses a controller's flags: -access FILE, -cache FILE, -settle D.
func Parse(args []string) (Flags, error) {
	fs := flag.NewFlagSet("controller", flag.ContinueOnError)
	var f Flags
	access := fs.String("access", "", "file of the apiserver's access (JSON)")
	fs.StringVar(&f.Cache, "cache", "", "cache file")
	fs.DurationVar(&f.Settle, "settle", 10*time.Second, "idle time before the steady resident set is read")
	if err := fs.Parse(args); err != nil {
		return f, err
	}
	b, err := os.ReadFile(*access)
	if err != nil {
		return f, fmt.Errorf("smallbench: access: %w", err)
	}
	if err := json.Unmarshal(b, &f.Access); err != nil {
		return f, fmt.Errorf("smallbench: access %s: %w", *access, err)
	}
	return f, nil
}

// Finish reads the peak resident set, waits settle, reads the steady one
// and writes the report to w.
func Finish(w io.Writer, objects int, sync, settle time.Duration) error {
	peak, err := procmem.Read(0)
	if err != nil {
		return err
	}
	time.Sleep(settle)
	steady, err := procmem.Read(0)
	if err != nil {
		return err
	}
	return json.NewEncoder(w).Encode(Report{Objects: objects, Sync: sync, Peak: peak.HWM, SteadyAnon: steady.Anon, SteadyFile: steady.File})
}

// Controller is a controller's informer factory with its Deployments
// informer: client-go's SharedInformerFactory or package informers' on a
// warmcache factory, the one difference between the two controllers.
type Controller struct {
	// Factory is started and waited for.
	Factory interface {
		Start(stopCh <-chan struct{})
		WaitForCacheSync(stopCh <-chan struct{}) map[reflect.Type]bool
	}
	// List lists every Deployment through the informer's lister and
	// returns how many.
	List func() (int, error)
	// Stop shuts the factory down.
	Stop func() error
}

// Main runs the controller called name and exits: it parses the flags,
// has build make its Controller, starts it, waits for its sync, lists
// every Deployment, writes the Report (Finish), then stops it. The sync is
// timed from the call, the start of main. An error is written to standard
// error after name, exit status 1.
func Main(name string, build func(ctx context.Context, fl Flags) (Controller, error)) {
	start := time.Now()
	if err := run(start, build); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		os.Exit(1)
	}
}

func run(start time.Time, build func(ctx context.Context, fl Flags) (Controller, error)) error {
	fl, err := Parse(os.Args[1:])
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c, err := build(ctx, fl)
	if err != nil {
		return err
	}
	c.Factory.Start(ctx.Done())
	for typ, ok := range c.Factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return fmt.Errorf("%v did not sync", typ)
		}
	}
	sync := time.Since(start)
	n, err := c.List()
	if err != nil {
		return err
	}
	err = Finish(os.Stdout, n, sync, fl.Settle)
	cancel()
	if serr := c.Stop(); err == nil {
		err = serr
	}
	return err
}
