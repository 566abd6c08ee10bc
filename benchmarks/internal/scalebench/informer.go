package scalebench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/warmcache/warmcache/benchmarks/internal/genserver"
	"github.com/warmcache/warmcache/benchmarks/internal/informerbench"
	"github.com/warmcache/warmcache/benchmarks/internal/procmem"
)

// Modes of an informer child.
const (
	modeCold           = "cold"
	modeWarmReplay     = "warm-replay"
	modeWarmNoHandler  = "warm-no-handler"
	modeFactoryCold    = "factory-cold"
	modeFactoryWarm    = "factory-warm"
	modeFactoryWarmOne = "factory-warm-one"
	modeFactorySteady  = "factory-steady"
)

// phaseTimeout bounds a child's run; reaching it is a failure. At a
// million pods under a 1.5 GiB cgroup on a loaded 2-core machine, the cold
// sync and steady state alone took 20 minutes and the relist did not end
// within 30.
const phaseTimeout = 2 * time.Hour

func informerChild(spec childSpec, out io.Writer) error {
	if err := joinCgroup(spec.Cgroup); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), phaseTimeout)
	defer cancel()
	rss, err := procmem.Start(0, 0)
	if err != nil {
		return err
	}
	defer rss.Stop()
	ctl := &genserver.Client{URL: spec.URL}
	emit := func(p Phase) error { return writePhase(out, p) }
	switch spec.Mode {
	case modeCold:
		return coldSteadyRelist(ctx, spec, ctl, rss, emit)
	case modeWarmReplay, modeWarmNoHandler:
		return warm(ctx, spec, rss, emit)
	case modeFactoryCold, modeFactoryWarm, modeFactoryWarmOne, modeFactorySteady:
		return factoryChild(ctx, spec, rss, emit)
	}
	return fmt.Errorf("unknown mode %q", spec.Mode)
}

func informerOptions(spec childSpec) informerbench.Options {
	return informerbench.Options{Dir: spec.Dir}
}

// coldSteadyRelist measures, in one process: a cold sync of the server's
// pods (the bolt file removed first), the steady state (spec.Updates
// updates delivered to the handler, then the settled heap) and a 410
// relist with spec.RelistPercent of the pods changed.
func coldSteadyRelist(ctx context.Context, spec childSpec, ctl *genserver.Client, rss *procmem.Sampler, emit func(Phase) error) error {
	opts := informerOptions(spec)
	if spec.Impl == informerbench.Bolt {
		if err := informerbench.RemoveBoltFile(opts); err != nil {
			return err
		}
	}
	m := startMeter(rss)
	inf, err := informerbench.Start(ctx, spec.Impl, genserver.Config(spec.URL), opts, true)
	if err != nil {
		return err
	}
	stop := func(err error) error { return errors.Join(err, inf.Stop()) }
	if err := inf.WaitSynced(ctx, spec.N); err != nil {
		return stop(err)
	}
	if err := emit(m.stop("cold", spec.Impl, spec.N, spec.N)); err != nil {
		return stop(err)
	}

	// Steady state: updates arrive through the watch as fast as the
	// informer takes them.
	if spec.Updates > 0 {
		m = startMeter(rss)
		_, seen, _ := inf.Counter.Counts()
		if _, err := ctl.Churn(ctx, "", spec.Updates, spec.Gen, 0); err != nil {
			return stop(errors.Join(err, ctl.Open(ctx)))
		}
		if err := ctl.Open(ctx); err != nil {
			return stop(err)
		}
		if err := inf.Counter.WaitUpdates(ctx, seen+spec.Updates); err != nil {
			return stop(err)
		}
		if err := emit(m.stop("steady", spec.Impl, spec.N, spec.Updates)); err != nil {
			return stop(err)
		}
	}

	if spec.RelistPercent >= 0 {
		p, err := relist(ctx, spec, ctl, inf, rss)
		if err != nil {
			return stop(err)
		}
		if err := emit(p); err != nil {
			return stop(err)
		}
	}
	return inf.Stop()
}

// relist changes spec.RelistPercent of the pods while the watch streams
// are held back, restarts the server (every watch ends, history
// compacted) and releases them: the informer's resumed watch gets 410
// Expired and it relists. Once the relist's list has begun, one more pod
// changes (the marker); the phase ends when the handler has seen it, after
// every notification of the relist.
func relist(ctx context.Context, spec childSpec, ctl *genserver.Client, inf *informerbench.Informer, rss *procmem.Sampler) (Phase, error) {
	changed := spec.N * spec.RelistPercent / 100
	gen := spec.Gen + 1
	_, seen, _ := inf.Counter.Counts()
	marked := inf.Counter.Mark(isGeneration(gen + 1))
	if changed > 0 {
		if _, err := ctl.Churn(ctx, "", changed, gen, 0); err != nil {
			return Phase{}, errors.Join(err, ctl.Open(ctx))
		}
	} else if err := ctl.Hold(ctx); err != nil {
		return Phase{}, err
	}
	before, err := ctl.Stats(ctx)
	if err != nil {
		return Phase{}, errors.Join(err, ctl.Open(ctx))
	}
	m := startMeter(rss)
	if err := errors.Join(ctl.Restart(ctx), ctl.Open(ctx)); err != nil {
		return Phase{}, err
	}
	if err := informerbench.WaitList(ctx, listsOf(ctl), before.Lists+before.WatchLists); err != nil {
		return Phase{}, err
	}
	if _, err := ctl.Churn(ctx, "", 1, gen+1, 0); err != nil {
		return Phase{}, errors.Join(err, ctl.Open(ctx))
	}
	if err := ctl.Open(ctx); err != nil {
		return Phase{}, err
	}
	if err := waitCtx(ctx, marked); err != nil {
		return Phase{}, fmt.Errorf("waiting for the marker after a relist: %w", err)
	}
	_, updates, _ := inf.Counter.Counts()
	updates -= seen + 1
	p := m.stop("relist", spec.Impl, spec.N, updates)
	if updates < changed || (spec.Impl != informerbench.ClientGo && updates != changed) {
		return p, fmt.Errorf("a relist of %d changed pods notified %d updates", changed, updates)
	}
	return p, nil
}

func isGeneration(gen uint32) func(obj interface{}) bool {
	want := strconv.FormatUint(uint64(gen), 10)
	return func(obj interface{}) bool {
		m, err := meta.Accessor(obj)
		return err == nil && m.GetAnnotations()[genserver.GenerationAnnotation] == want
	}
}

// listsOf returns ctl's count of lists plus WatchLists.
func listsOf(ctl *genserver.Client) func(context.Context) (int, error) {
	return func(ctx context.Context) (int, error) {
		st, err := ctl.Stats(ctx)
		return st.Lists + st.WatchLists, err
	}
}

// warm measures a warm restart of the bolt informer on the file a cold
// child left, with a handler every stored pod is replayed to or without.
func warm(ctx context.Context, spec childSpec, rss *procmem.Sampler, emit func(Phase) error) error {
	withHandler := spec.Mode == modeWarmReplay
	m := startMeter(rss)
	inf, err := informerbench.Start(ctx, informerbench.Bolt, genserver.Config(spec.URL), informerOptions(spec), withHandler)
	if err != nil {
		return err
	}
	if err := inf.WaitSynced(ctx, spec.N); err != nil {
		return errors.Join(err, inf.Stop())
	}
	events := 0
	if withHandler {
		events, _, _ = inf.Counter.Counts()
	}
	p := m.stop(spec.Mode, informerbench.Bolt, spec.N, events)
	if withHandler && events != spec.N {
		return errors.Join(fmt.Errorf("a warm restart replayed %d adds, want %d", events, spec.N), inf.Stop())
	}
	return errors.Join(emit(p), inf.Stop())
}
