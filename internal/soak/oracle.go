package soak

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// ErrOracle reports that the record of the server's history failed: the
// soak cannot check what it was told against it any more.
var ErrOracle = errors.New("soak: etcd history failed")

// registryPrefix is where kube-apiserver keeps objects in etcd (its
// --etcd-prefix default): <prefix><group/>resource/namespace/name.
const registryPrefix = "/registry/"

// oracle records the writes etcd makes to the soak's resources, from one
// watch of the apiserver's whole key space, into a history. Reading etcd
// directly, and not the apiserver, gives the server's history without the
// gaps a watch through the apiserver has across its restarts and 410s.
type oracle struct {
	*history
	cli      *clientv3.Client
	prefixes map[string]string // etcd key prefix -> resource
	cancel   context.CancelFunc
	wg       sync.WaitGroup

	// pokeMu guards lastPoke.
	pokeMu   sync.Mutex
	lastPoke time.Time
}

// etcdPrefix returns the etcd key prefix of a resource's objects.
func etcdPrefix(group, resource string) string {
	if group == "" {
		return registryPrefix + resource + "/"
	}
	return registryPrefix + group + "/" + resource + "/"
}

// startOracle reads the current keys of the resources (prefix ->
// resource name) from etcd at endpoint and records every later write
// until stop.
func startOracle(ctx context.Context, endpoint string, prefixes map[string]string) (*oracle, error) {
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{endpoint}, DialTimeout: 10 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return nil, fmt.Errorf("%w: connect to %s: %w", ErrOracle, endpoint, err)
	}
	names := make([]string, 0, len(prefixes))
	for _, n := range prefixes {
		names = append(names, n)
	}
	o := &oracle{history: newHistory(names...), cli: cli, prefixes: prefixes}
	// The objects there now, each at the revision that wrote it.
	got, err := cli.Get(ctx, registryPrefix, clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		cli.Close()
		return nil, fmt.Errorf("%w: read %s: %w", ErrOracle, registryPrefix, err)
	}
	var initial []change
	for _, kv := range got.Kvs {
		if res, key, ok := o.split(string(kv.Key)); ok {
			initial = append(initial, change{resource: res, key: key, rev: kv.ModRevision})
		}
	}
	slices.SortFunc(initial, func(a, b change) int { return int(a.rev - b.rev) })
	start := got.Header.Revision
	if err := o.record(initial, start); err != nil {
		cli.Close()
		return nil, err
	}
	wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(context.Background()))
	o.cancel = cancel
	wch := cli.Watch(wctx, registryPrefix, clientv3.WithPrefix(), clientv3.WithRev(start+1), clientv3.WithProgressNotify())
	o.wg.Go(func() { o.watch(wctx, wch) })
	return o, nil
}

// split maps an etcd key to its resource and namespace/name key.
func (o *oracle) split(etcdKey string) (resource, key string, ok bool) {
	for p, r := range o.prefixes {
		if k, found := strings.CutPrefix(etcdKey, p); found {
			return r, k, true
		}
	}
	return "", "", false
}

func (o *oracle) watch(ctx context.Context, wch clientv3.WatchChan) {
	for resp := range wch {
		if err := resp.Err(); err != nil {
			o.fail(fmt.Errorf("%w: watch: %w (compacted at revision %d)", ErrOracle, err, resp.CompactRevision))
			return
		}
		if resp.IsProgressNotify() {
			_ = o.record(nil, resp.Header.Revision)
			continue
		}
		var cs []change
		var last int64
		for _, ev := range resp.Events {
			last = ev.Kv.ModRevision
			if res, key, ok := o.split(string(ev.Kv.Key)); ok {
				cs = append(cs, change{resource: res, key: key, rev: ev.Kv.ModRevision, deleted: ev.Type == mvccpb.DELETE})
			}
		}
		if err := o.record(cs, last); err != nil {
			o.fail(fmt.Errorf("%w: %w", ErrOracle, err))
			return
		}
	}
	if ctx.Err() == nil {
		o.fail(fmt.Errorf("%w: the watch ended", ErrOracle))
	}
}

// Revision returns etcd's current revision.
func (o *oracle) Revision(ctx context.Context) (int64, error) {
	resp, err := o.cli.Get(ctx, "compact_rev_key", clientv3.WithCountOnly())
	if err != nil {
		return 0, fmt.Errorf("%w: read the revision: %w", ErrOracle, err)
	}
	return resp.Header.Revision, nil
}

// WaitProgress waits until every write up to rev is recorded.
func (o *oracle) WaitProgress(ctx context.Context, rev int64) error {
	return o.waitProgress(ctx, rev, o.poke)
}

// Sync waits until every write made so far is recorded, and returns the
// revision that covers.
func (o *oracle) Sync(ctx context.Context) (int64, error) {
	rev, err := o.Revision(ctx)
	if err != nil {
		return 0, err
	}
	return rev, o.WaitProgress(ctx, rev)
}

// poke asks etcd for a progress notification (at most once per
// pokeInterval, whoever waits): sent once the watch has caught up, it
// moves the progress past revisions that wrote none of the watched keys.
func (o *oracle) poke() {
	o.pokeMu.Lock()
	defer o.pokeMu.Unlock()
	if time.Since(o.lastPoke) < pokeInterval/2 {
		return
	}
	o.lastPoke = time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = o.cli.RequestProgress(clientv3.WithRequireLeader(ctx))
}

// stop ends the watch.
func (o *oracle) stop() {
	o.cancel()
	o.wg.Wait()
	o.cli.Close()
}
