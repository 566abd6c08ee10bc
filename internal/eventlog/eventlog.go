// Package eventlog writes what a controller's event handlers are told as
// JSON lines, for a program that checks them: the event logs of the demo's
// controller (internal/democtl) and of the soak's (internal/soakctl).
package eventlog

import (
	"encoding/json"
	"io"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// Writer writes events of type E as JSON lines, one write each, so that a
// line is out of the process as soon as it is written. The first failed
// write is logged and disables it: a broken log never stops the
// controller. It is safe for concurrent use.
type Writer[E any] struct {
	logger klog.Logger
	// mu guards enc.
	mu  sync.Mutex
	enc *json.Encoder // nil: disabled
}

// New returns a Writer of events to w, logging its failure to logger; a
// nil w makes a Writer that writes nothing.
func New[E any](logger klog.Logger, w io.Writer) *Writer[E] {
	l := &Writer[E]{logger: logger}
	if w != nil {
		l.enc = json.NewEncoder(w)
	}
	return l
}

// Write writes e as one line.
func (l *Writer[E]) Write(e E) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.enc == nil {
		return
	}
	if err := l.enc.Encode(e); err != nil {
		l.logger.Error(err, "Writing the event log failed; disabling it")
		l.enc = nil
	}
}

// ResourceVersion returns the resourceVersion of obj, or of the last known
// state inside a cache.DeletedFinalStateUnknown ("" for an object without
// metadata): what a line records of the object a handler was given.
func ResourceVersion(obj interface{}) string {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return ""
	}
	return m.GetResourceVersion()
}
