package testenv

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
)

// SaveEtcdData copies etcd's data directory into a new directory under
// Dir and returns its path, for a later RestartWithEtcdData (an etcd
// restored from an older backup). etcd and kube-apiserver are killed for
// the copy and started again, at the same addresses, before it returns;
// clients see their connections break, and the apiserver's watch cache
// starts empty. On a shared environment it returns ErrShared.
func (e *Env) SaveEtcdData(ctx context.Context) (string, error) {
	if err := e.killForRestart("save etcd data", true); err != nil {
		return "", err
	}
	to, err := os.MkdirTemp(e.dir, "etcd-copy-")
	if err == nil {
		err = os.CopyFS(filepath.Join(to, etcdDataDir), os.DirFS(filepath.Join(e.dir, etcdDataDir)))
	}
	if rerr := e.restartBoth(ctx); rerr != nil {
		return "", rerr
	}
	if err != nil {
		return "", fmt.Errorf("%w: save etcd data: %w", ErrEtcd, err)
	}
	return to, nil
}

// RestartWithEtcdData kills etcd and kube-apiserver, replaces etcd's data
// with the copy SaveEtcdData returned, or with nothing when from is ""
// (a new cluster: every UID and resourceVersion starts afresh), and starts
// both again at the same addresses with the same flags. To clients it
// looks like the cluster was restored from a backup or recreated at the
// same address. On a shared environment it returns ErrShared.
func (e *Env) RestartWithEtcdData(ctx context.Context, from string) error {
	if err := e.killForRestart("restart with etcd data", true); err != nil {
		return err
	}
	data := filepath.Join(e.dir, etcdDataDir)
	if err := os.RemoveAll(data); err != nil {
		return fmt.Errorf("%w: remove etcd data: %w", ErrEtcd, err)
	}
	if from != "" {
		if err := os.CopyFS(data, os.DirFS(filepath.Join(from, etcdDataDir))); err != nil {
			return fmt.Errorf("%w: restore etcd data from %s: %w", ErrEtcd, from, err)
		}
	}
	return e.restartBoth(ctx)
}

// restartBoth starts etcd and then kube-apiserver with their recorded
// flags and waits until both are ready.
func (e *Env) restartBoth(ctx context.Context) error {
	etcd, err := e.restartProcess(etcdName, e.binaries.Etcd, e.etcdArgs, func(p *process) { e.etcd = p })
	if err != nil {
		return err
	}
	if err := e.waitEtcd(ctx, etcd); err != nil {
		return fmt.Errorf("%w: restart etcd: %w\n%s", ErrStart, err, e.LogTails())
	}
	return e.restartAPIServer(ctx)
}
