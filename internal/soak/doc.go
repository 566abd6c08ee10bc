// Package soak is `make soak`: a long run of faults against a real
// kube-apiserver and etcd (package testenv), checking after every recovery
// that a controller on warmcache holds exactly the server's state, that
// its handlers were told what client-go's contract allows, and that its
// memory, goroutines and file stay bounded. Run writes a report a person
// reads (Markdown, SVG figures, JSON).
//
// # What runs
//
// The controller (package soakctl) runs as a child process: three
// informers of one factory on one cache file (pods, configmaps, the soak's
// Widget custom resource), each handler logging every event. It reaches
// the apiserver through a loopback TCP proxy (TLS passes through). A churn
// creates, updates and deletes objects of the three resources at a target
// rate (200 a second by default) around a steady population. The faults
// come from a schedule drawn from a seed (NewSchedule): SIGKILL of the
// controller every one to three minutes, sometimes killed again early in
// its restart, sometimes while etcd is compacted or the apiserver restarted
// while it is down; kube-apiserver restarts, some followed by a kill during
// the relists they cause; etcd compactions; streams cut, stalled and
// truncated mid-frame by the proxy; the file's disk filled once (a tmpfs,
// while the informers relist); one page of the file overwritten while the
// controller is down. Faults run one after another; each is followed by a
// recovery check with the churn paused.
//
// # The oracle
//
// The soak watches etcd itself, from before the first object, and records
// every write of the three resources' keys with its revision (oracle,
// history). An object's resourceVersion is the etcd revision that wrote it,
// so this history answers, for any revision, exactly which objects the
// server held, and whether a resourceVersion is one the server ever wrote.
// The watch is never behind a compaction: the soak compacts only once the
// history has caught up.
//
// # What is checked
//
// Each event a handler is told, as it comes (runCheck): no add of a key it
// holds, an update only from the last state it was told, no delete of a key
// it does not hold, a DeletedFinalStateUnknown carrying the last state
// told, every state told one the server wrote; each handler's initial list
// (its adds with isInInitialList) exactly the server's objects at one
// revision between the controller's start and the end of the list — a warm
// start observationally a cold start.
//
// After each recovery (converge): the churn paused, a paginated LIST of
// each resource, itself compared with etcd's history at its
// resourceVersion; then every handler, folded, must hold exactly the LIST
// (names and resourceVersions) within ConvergeTimeout. The time from the
// end of the fault to then is the time to converge.
//
// After each kill, while the controller is down (checkFile): `snapshot
// verify` finds nothing, and each resource the file records as complete
// holds exactly the server's objects at the resourceVersion it records
// (invariant 1), read with the snapshot CLI. At the end the controller is
// stopped with SIGTERM and every object of its file is compared with the
// server's, content included. A file the controller moves aside as
// corrupt is a finding unless the soak damaged it. The anonymous RSS
// (/proc), goroutines (the controller's runtime lines) and the file's size,
// sampled while the controller is synced and no fault is in progress, must
// not grow from one quarter of the run to the next (bounds; the RSS in
// runs of 20 minutes or more, whose quarters are not one fault's
// aftermath).
//
// A failed check is a Finding in the report; Run goes on, so that one
// run reports every failure it meets.
package soak
