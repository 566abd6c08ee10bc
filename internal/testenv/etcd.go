package testenv

import (
	"context"
	"fmt"
	"strconv"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// compactRevKey is the etcd key through which kube-apiservers share the
// revision they compacted etcd to (k8s.io/apiserver/pkg/storage/etcd3).
const compactRevKey = "compact_rev_key"

const etcdDialTimeout = 10 * time.Second

// Compact compacts etcd to its current revision, as the apiserver's own
// compactor would, and returns that revision. Afterwards etcd answers
// "compacted" for every older revision, so the apiserver returns 410 Gone
// (IsResourceExpired/IsGone) for any request it delegates to etcd at an RV
// older than the newest one: a watch when the watch cache is off
// (--watch-cache=false), an exact-RV LIST or a continue token.
//
// The apiserver's watch cache keeps serving watches from the RVs its
// in-memory window still holds; it learns the compacted revision through
// compact_rev_key, which Compact updates, but only drops list snapshots
// for it. Restarting the apiserver (RestartAPIServer) empties that window.
//
// On a shared environment (Shared) it returns ErrShared: every other
// test's watches would expire.
func (e *Env) Compact(ctx context.Context) (int64, error) {
	if err := e.refuseShared("compact etcd"); err != nil {
		return 0, err
	}
	if _, _, err := e.processes(); err != nil {
		return 0, fmt.Errorf("compact etcd: %w", err)
	}
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   []string{e.etcdURL},
		DialTimeout: etcdDialTimeout,
		Logger:      zap.NewNop(),
		Context:     ctx,
	})
	if err != nil {
		return 0, fmt.Errorf("%w: connect to %s: %w", ErrEtcd, e.etcdURL, err)
	}
	defer cli.Close()
	// Announce a lower bound first (the revision before the write), so the
	// key always holds a revision that is compacted by the time it is read.
	got, err := cli.Get(ctx, compactRevKey)
	if err != nil {
		return 0, fmt.Errorf("%w: read %s: %w", ErrEtcd, compactRevKey, err)
	}
	put, err := cli.Put(ctx, compactRevKey, strconv.FormatInt(got.Header.Revision, 10))
	if err != nil {
		return 0, fmt.Errorf("%w: write %s: %w", ErrEtcd, compactRevKey, err)
	}
	rev := put.Header.Revision
	if _, err := cli.Compact(ctx, rev, clientv3.WithCompactPhysical()); err != nil {
		return 0, fmt.Errorf("%w: compact to revision %d: %w", ErrEtcd, rev, err)
	}
	if _, err := cli.Put(ctx, compactRevKey, strconv.FormatInt(rev, 10)); err != nil {
		return 0, fmt.Errorf("%w: write %s: %w", ErrEtcd, compactRevKey, err)
	}
	return rev, nil
}
