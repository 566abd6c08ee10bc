package soak

import (
	"math/rand/v2"
	"slices"
	"time"
)

// FaultKind names a kind of fault the soak injects.
type FaultKind string

// The kinds of fault.
const (
	// FaultKill: SIGKILL of the controller at a random moment; it stays
	// down for Hold (while the faults in While happen), then starts again
	// on the same file.
	FaultKill FaultKind = "kill"
	// FaultAPIServerRestart: kube-apiserver killed and started again
	// (testenv.RestartAPIServer): connections break, and its watch cache
	// starts empty, so watches from older resourceVersions answer 410.
	FaultAPIServerRestart FaultKind = "apiserver restart"
	// FaultCompact: etcd compacted to its current revision
	// (testenv.Compact): continue tokens and older resourceVersions
	// expire.
	FaultCompact FaultKind = "etcd compaction"
	// FaultStreamCut: every connection of the controller closed by the
	// proxy.
	FaultStreamCut FaultKind = "stream cut"
	// FaultStreamStall: every byte between the controller and the
	// apiserver held by the proxy for Hold.
	FaultStreamStall FaultKind = "stream stall"
	// FaultStreamTruncate: each connection forwards Bytes more bytes from
	// the apiserver, then is cut, mid-frame.
	FaultStreamTruncate FaultKind = "stream truncated"
	// FaultDiskFull: the file's disk filled for Hold, then freed.
	FaultDiskFull FaultKind = "disk full"
	// FaultPageDamage: one page of the file overwritten with random bytes
	// while the controller is down (only in a kill's While).
	FaultPageDamage FaultKind = "page damage"
)

// FaultKinds lists every kind, in the report's order.
var FaultKinds = []FaultKind{FaultKill, FaultAPIServerRestart, FaultCompact, FaultStreamCut, FaultStreamStall,
	FaultStreamTruncate, FaultDiskFull, FaultPageDamage}

// Fault is one entry of the schedule.
type Fault struct {
	// At is when the fault is due, from the start of the schedule.
	At   time.Duration
	Kind FaultKind
	// Hold is how long a kill keeps the controller down, a stall holds
	// the streams, a full disk stays full.
	Hold time.Duration
	// While are the faults made while a killed controller is down:
	// FaultCompact, FaultAPIServerRestart (a 410 at its warm start),
	// FaultPageDamage.
	While []FaultKind
	// Again, when positive, kills the controller again that long after
	// it started after a kill (mid open, replay, catch-up or cold sync),
	// or after an apiserver restart (mid relist); it then starts again at
	// once.
	Again time.Duration
	// Bytes is what a truncated connection still forwards.
	Bytes int
	// Seed drives the fault's own random choices (the page damaged).
	Seed uint64
}

// The schedule's intervals: each kind's timeline draws the gap to its next
// fault uniformly from its range.
var (
	killEvery      = [2]time.Duration{time.Minute, 3 * time.Minute}
	apiserverEvery = [2]time.Duration{3 * time.Minute, 6 * time.Minute}
	compactEvery   = [2]time.Duration{2 * time.Minute, 5 * time.Minute}
	streamEvery    = [2]time.Duration{time.Minute, 3 * time.Minute}
	killDown       = [2]time.Duration{500 * time.Millisecond, 15 * time.Second}
	killAgain      = [2]time.Duration{0, 2 * time.Second}
	relistKill     = [2]time.Duration{0, 1500 * time.Millisecond}
	coldKill       = [2]time.Duration{200 * time.Millisecond, 1200 * time.Millisecond}
	stallHold      = [2]time.Duration{5 * time.Second, time.Minute}
	diskFullHold   = [2]time.Duration{20 * time.Second, time.Minute}
)

// Probabilities of the compound faults.
const (
	pKillAgain       = 0.35 // a kill is followed by a second one early in the restart
	pCompactWhile    = 0.25 // etcd compacted while a killed controller is down
	pRestartWhile    = 0.2  // the apiserver restarted while a killed controller is down
	pKillMidRelist   = 0.3  // an apiserver restart is followed by a kill during the relist
	maxTruncateBytes = 64 << 10
)

// NewSchedule returns the faults of a run of length d from seed, in time
// order. Each kind's timeline is drawn from its own interval; a kind whose
// timeline has no fault within d (a short run) gets one at a random moment
// in the middle 80% of the run; the disk is filled once and a page damaged
// once, in the middle half. The same seed and length give the same
// schedule.
func NewSchedule(seed uint64, d time.Duration) []Fault {
	rng := rand.New(rand.NewPCG(seed, 0x50a6))
	between := func(r [2]time.Duration) time.Duration {
		return r[0] + time.Duration(rng.Int64N(int64(r[1]-r[0])+1))
	}
	chance := func(p float64) bool { return rng.Float64() < p }
	var faults []Fault
	timeline := func(every [2]time.Duration, make func(at time.Duration) Fault) {
		n := 0
		for at := between(every); at < d; at += between(every) {
			faults = append(faults, make(at))
			n++
		}
		if n == 0 {
			faults = append(faults, make(d/10+time.Duration(rng.Int64N(int64(d*8/10)+1))))
		}
	}
	timeline(killEvery, func(at time.Duration) Fault {
		f := Fault{At: at, Kind: FaultKill, Hold: between(killDown)}
		if chance(pCompactWhile) {
			f.While = append(f.While, FaultCompact)
		}
		if chance(pRestartWhile) {
			f.While = append(f.While, FaultAPIServerRestart)
		}
		if chance(pKillAgain) {
			f.Again = max(between(killAgain), time.Millisecond)
		}
		return f
	})
	timeline(apiserverEvery, func(at time.Duration) Fault {
		f := Fault{At: at, Kind: FaultAPIServerRestart}
		if chance(pKillMidRelist) {
			f.Again = max(between(relistKill), time.Millisecond)
		}
		return f
	})
	timeline(compactEvery, func(at time.Duration) Fault { return Fault{At: at, Kind: FaultCompact} })
	// The three stream faults share a timeline, each kind at least once.
	streams := []FaultKind{FaultStreamCut, FaultStreamStall, FaultStreamTruncate}
	stream := func(at time.Duration, kind FaultKind) Fault {
		f := Fault{At: at, Kind: kind}
		switch kind {
		case FaultStreamStall:
			f.Hold = between(stallHold)
		case FaultStreamTruncate:
			f.Bytes = 1 + rng.IntN(maxTruncateBytes)
		}
		return f
	}
	timeline(streamEvery, func(at time.Duration) Fault { return stream(at, streams[rng.IntN(len(streams))]) })
	for _, k := range streams {
		if !slices.ContainsFunc(faults, func(f Fault) bool { return f.Kind == k }) {
			faults = append(faults, stream(d/10+time.Duration(rng.Int64N(int64(d*8/10)+1)), k))
		}
	}
	middle := func() time.Duration { return d/4 + time.Duration(rng.Int64N(int64(d/2)+1)) }
	faults = append(faults, Fault{At: middle(), Kind: FaultDiskFull, Hold: between(diskFullHold)})
	slices.SortStableFunc(faults, func(a, b Fault) int { return int(a.At - b.At) })
	// The page damage: at the kill nearest a moment in the middle half.
	target, best := middle(), -1
	for i, f := range faults {
		if f.Kind == FaultKill && (best < 0 || absDuration(f.At-target) < absDuration(faults[best].At-target)) {
			best = i
		}
	}
	// Its restart is not killed again: the next file check would read
	// the damaged file if the controller had not yet moved it aside.
	faults[best].While = append(faults[best].While, FaultPageDamage)
	faults[best].Again = 0
	for i := range faults {
		faults[i].Seed = rng.Uint64()
	}
	return faults
}

// ColdKill returns when, from seed, the controller's first start (cold:
// an empty file) is killed: during its initial list, most likely. Three
// thousand objects are listed and told in about a second on two loaded
// cores: a kill 1.4 s and 1.8 s in found every handler synced.
func ColdKill(seed uint64) time.Duration {
	rng := rand.New(rand.NewPCG(seed, 0xc01d))
	return coldKill[0] + time.Duration(rng.Int64N(int64(coldKill[1]-coldKill[0])+1))
}

func absDuration(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}

// Count returns how many faults of each kind the schedule holds, those
// made while a killed controller is down included.
func Count(faults []Fault) map[FaultKind]int {
	out := map[FaultKind]int{}
	for _, f := range faults {
		out[f.Kind]++
		for _, w := range f.While {
			out[w]++
		}
	}
	return out
}
