package informer

import (
	"context"
	"errors"

	"github.com/warmcache/warmcache/deltafifo"
	"github.com/warmcache/warmcache/reflector"
)

// sink adapts a deltafifo.Queue to the reflector's Sink contract: a
// BeginReplace while a replace is open abandons the open one (the queue
// would return ErrReplaceInProgress), by aborting it first.
type sink struct {
	*deltafifo.Queue
}

var (
	_ reflector.Sink           = sink{}
	_ reflector.ReplaceAborter = sink{}
)

// BeginReplace aborts an open replace, then begins a new one.
func (s sink) BeginReplace(ctx context.Context) error {
	if err := s.Queue.AbortReplace(); err != nil && !errors.Is(err, deltafifo.ErrNoReplace) {
		return err
	}
	return s.Queue.BeginReplace(ctx)
}
