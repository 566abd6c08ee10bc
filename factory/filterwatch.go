package factory

import (
	"sync"

	"k8s.io/apimachinery/pkg/watch"
)

// filterWatch passes on the events of a watch that keep returns true for,
// as keep may have changed them. Unlike watch.Filter's, its goroutine
// ends on Stop even when nobody reads the event it holds. keep is called
// from that one goroutine only.
type filterWatch struct {
	in   watch.Interface
	out  chan watch.Event
	stop chan struct{}
	once sync.Once
}

func newFilterWatch(in watch.Interface, keep func(*watch.Event) bool) *filterWatch {
	w := &filterWatch{in: in, out: make(chan watch.Event), stop: make(chan struct{})}
	go func() {
		defer close(w.out)
		for {
			select {
			case e, ok := <-in.ResultChan():
				if !ok {
					return
				}
				if !keep(&e) {
					continue
				}
				select {
				case w.out <- e:
				case <-w.stop:
					return
				}
			case <-w.stop:
				return
			}
		}
	}()
	return w
}

// Stop stops the underlying watch and the goroutine. It may be called
// more than once, and from any goroutine.
func (w *filterWatch) Stop() {
	w.once.Do(func() {
		close(w.stop)
		w.in.Stop()
	})
}

// ResultChan returns the events, closed after Stop or the underlying
// watch's end.
func (w *filterWatch) ResultChan() <-chan watch.Event { return w.out }
