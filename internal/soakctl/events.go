package soakctl

import (
	"k8s.io/client-go/tools/cache"

	"github.com/warmcache/warmcache/internal/eventlog"
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

// handler logs every event of one informer.
type handler struct {
	resource string
	log      *eventlog.Writer[Event]
}

var _ cache.ResourceEventHandler = handler{}

func (h handler) OnAdd(obj interface{}, isInInitialList bool) {
	h.log.Write(Event{Type: TypeAdd, Resource: h.resource, Key: key(obj), ResourceVersion: eventlog.ResourceVersion(obj), Initial: isInInitialList})
}

func (h handler) OnUpdate(oldObj, newObj interface{}) {
	h.log.Write(Event{Type: TypeUpdate, Resource: h.resource, Key: key(newObj), ResourceVersion: eventlog.ResourceVersion(newObj), OldResourceVersion: eventlog.ResourceVersion(oldObj)})
}

func (h handler) OnDelete(obj interface{}) {
	_, unknown := obj.(cache.DeletedFinalStateUnknown)
	h.log.Write(Event{Type: TypeDelete, Resource: h.resource, Key: key(obj), ResourceVersion: eventlog.ResourceVersion(obj), FinalStateUnknown: unknown})
}

func key(obj interface{}) string {
	k, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		return "<" + err.Error() + ">"
	}
	return k
}
