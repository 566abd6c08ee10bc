package soakctl

import (
	"encoding/json"
	"io"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// Types of Event.
const (
	TypeAdd    = "add"
	TypeUpdate = "update"
	TypeDelete = "delete"
	// TypeSynced: the handler of Resource has synced (its registration's
	// HasSynced); Warm says whether the informer's store was complete at
	// start.
	TypeSynced = "synced"
	// TypeRuntime: a sample of the process's runtime and the informers'
	// counters (Runtime).
	TypeRuntime = "runtime"
)

// Event is one line of the controller's event log (JSON).
type Event struct {
	Type     string `json:"type"`
	Resource string `json:"resource,omitempty"`
	// Key is the object's namespace/name.
	Key string `json:"key,omitempty"`
	// ResourceVersion is the object's: the new one of an update, the
	// last known state of a delete.
	ResourceVersion string `json:"rv,omitempty"`
	// OldResourceVersion is an update's old object's.
	OldResourceVersion string `json:"oldRV,omitempty"`
	// Initial is an add's isInInitialList.
	Initial bool `json:"initial,omitempty"`
	// FinalStateUnknown marks a delete whose object is a
	// cache.DeletedFinalStateUnknown.
	FinalStateUnknown bool `json:"finalStateUnknown,omitempty"`
	// Warm describes a synced line.
	Warm bool `json:"warm,omitempty"`
	// Runtime describes a runtime line.
	Runtime *Runtime `json:"runtime,omitempty"`
}

// Runtime is what a runtime line reports. The counters are the process's
// own, summed over its informers, from their metrics.
type Runtime struct {
	Goroutines    int    `json:"goroutines"`
	HeapBytes     uint64 `json:"heapBytes"`
	Lists         int64  `json:"lists"`
	Relists       int64  `json:"relists"`
	Expired       int64  `json:"expired"`
	Resumes       int64  `json:"resumes"`
	ApplyFailures int64  `json:"applyFailures"`
}

// eventLog writes Events as JSON lines, one write each, so that a line
// is out of the process as soon as it is written.
type eventLog struct {
	logger klog.Logger
	// mu guards enc.
	mu  sync.Mutex
	enc *json.Encoder // nil: disabled after a write error
}

func newEventLog(logger klog.Logger, w io.Writer) *eventLog {
	return &eventLog{logger: logger, enc: json.NewEncoder(w)}
}

func (l *eventLog) write(e Event) {
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

// handler logs every event of one informer.
type handler struct {
	resource string
	log      *eventLog
}

var _ cache.ResourceEventHandler = handler{}

func (h handler) OnAdd(obj interface{}, isInInitialList bool) {
	h.log.write(Event{Type: TypeAdd, Resource: h.resource, Key: key(obj), ResourceVersion: resourceVersion(obj), Initial: isInInitialList})
}

func (h handler) OnUpdate(oldObj, newObj interface{}) {
	h.log.write(Event{Type: TypeUpdate, Resource: h.resource, Key: key(newObj), ResourceVersion: resourceVersion(newObj), OldResourceVersion: resourceVersion(oldObj)})
}

func (h handler) OnDelete(obj interface{}) {
	_, unknown := obj.(cache.DeletedFinalStateUnknown)
	h.log.write(Event{Type: TypeDelete, Resource: h.resource, Key: key(obj), ResourceVersion: resourceVersion(obj), FinalStateUnknown: unknown})
}

func key(obj interface{}) string {
	k, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		return "<" + err.Error() + ">"
	}
	return k
}

// resourceVersion returns obj's resourceVersion, or that of the last
// known state in a DeletedFinalStateUnknown.
func resourceVersion(obj interface{}) string {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return ""
	}
	return m.GetResourceVersion()
}
