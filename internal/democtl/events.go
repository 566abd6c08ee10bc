package democtl

import (
	"sync/atomic"

	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"github.com/warmcache/warmcache/internal/eventlog"
)

// Event is one line of Config.EventLog.
type Event struct {
	// Type is "add", "update", "delete", "synced" (the informer has synced
	// and the handler got every initial event) or "steady" (after that,
	// the queue was drained and the steady heap measured).
	Type string `json:"type"`
	// Key is the object's namespace/name (not for "synced").
	Key string `json:"key,omitempty"`
	// ResourceVersion is the object's (the new one for an update, the
	// last known state for a delete).
	ResourceVersion string `json:"rv,omitempty"`
	// OldResourceVersion is the old object's, for an update.
	OldResourceVersion string `json:"oldRV,omitempty"`
	// Initial is isInInitialList, for an add.
	Initial bool `json:"initial,omitempty"`
	// FinalStateUnknown is true for a delete whose object is a
	// cache.DeletedFinalStateUnknown.
	FinalStateUnknown bool `json:"finalStateUnknown,omitempty"`
	// WarmStart and SyncedSeconds describe a "synced" line.
	WarmStart     bool    `json:"warmStart,omitempty"`
	SyncedSeconds float64 `json:"syncedSeconds,omitempty"`
	// SteadyHeapBytes describes a "steady" line (Stats.SteadyHeapBytes).
	SteadyHeapBytes uint64 `json:"steadyHeapBytes,omitempty"`
}

// counters are the atomically updated EventCounts.
type counters struct {
	initialAdds, adds, updates, deletes, unknown atomic.Int64
}

func (c *counters) snapshot() EventCounts {
	return EventCounts{
		InitialAdds: c.initialAdds.Load(), Adds: c.adds.Load(), Updates: c.updates.Load(),
		Deletes: c.deletes.Load(), DeletesFinalStateUnknown: c.unknown.Load(),
	}
}

// handler is the sample-controller handler: it counts and logs each event
// and enqueues the object's key, nothing more.
type handler struct {
	queue  workqueue.TypedRateLimitingInterface[string]
	log    *eventlog.Writer[Event]
	counts *counters
	logger klog.Logger
}

var _ cache.ResourceEventHandler = (*handler)(nil)

func (h *handler) OnAdd(obj interface{}, isInInitialList bool) {
	if isInInitialList {
		h.counts.initialAdds.Add(1)
	} else {
		h.counts.adds.Add(1)
	}
	key := h.enqueue(obj)
	h.log.Write(Event{Type: "add", Key: key, ResourceVersion: eventlog.ResourceVersion(obj), Initial: isInInitialList})
}

func (h *handler) OnUpdate(oldObj, newObj interface{}) {
	h.counts.updates.Add(1)
	key := h.enqueue(newObj)
	h.log.Write(Event{Type: "update", Key: key, ResourceVersion: eventlog.ResourceVersion(newObj), OldResourceVersion: eventlog.ResourceVersion(oldObj)})
}

func (h *handler) OnDelete(obj interface{}) {
	h.counts.deletes.Add(1)
	_, unknown := obj.(cache.DeletedFinalStateUnknown)
	if unknown {
		h.counts.unknown.Add(1)
	}
	key := h.enqueue(obj)
	h.log.Write(Event{Type: "delete", Key: key, ResourceVersion: eventlog.ResourceVersion(obj), FinalStateUnknown: unknown})
}

func (h *handler) enqueue(obj interface{}) string {
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		h.logger.Error(err, "Cannot key an object; dropping its event")
		return ""
	}
	h.queue.Add(key)
	return key
}
