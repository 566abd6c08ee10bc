package soak

import (
	"reflect"
	"slices"
	"testing"
	"time"
)

func TestScheduleIsTheSeeds(t *testing.T) {
	a, b := NewSchedule(42, time.Hour), NewSchedule(42, time.Hour)
	if !reflect.DeepEqual(a, b) {
		t.Error("one seed gave two schedules")
	}
	if reflect.DeepEqual(a, NewSchedule(43, time.Hour)) {
		t.Error("two seeds gave one schedule")
	}
	if k := ColdKill(42); k != ColdKill(42) || k < coldKill[0] || k > coldKill[1] {
		t.Errorf("ColdKill(42) = %v, want one moment in %v", k, coldKill)
	}
}

func TestSchedule(t *testing.T) {
	for _, d := range []time.Duration{90 * time.Second, 5 * time.Minute, 20 * time.Minute, time.Hour} {
		for seed := range uint64(20) {
			faults := NewSchedule(seed, d)
			if !slices.IsSortedFunc(faults, func(a, b Fault) int { return int(a.At - b.At) }) {
				t.Fatalf("%v seed %d: not in time order", d, seed)
			}
			n := Count(faults)
			for _, k := range FaultKinds {
				if n[k] == 0 {
					t.Errorf("%v seed %d: no %s", d, seed, k)
				}
			}
			if n[FaultDiskFull] != 1 || n[FaultPageDamage] != 1 {
				t.Errorf("%v seed %d: %d disk fills and %d page damages, want one each", d, seed, n[FaultDiskFull], n[FaultPageDamage])
			}
			var kills []time.Duration
			for _, f := range faults {
				if f.At <= 0 || f.At >= d {
					t.Errorf("%v seed %d: %s at %v, outside the run", d, seed, f.Kind, f.At)
				}
				switch f.Kind {
				case FaultKill:
					kills = append(kills, f.At)
					if f.Hold < killDown[0] || f.Hold > killDown[1] || f.Again < 0 || f.Again > killAgain[1] {
						t.Errorf("%v seed %d: kill %+v out of its bounds", d, seed, f)
					}
				case FaultStreamStall:
					if f.Hold < stallHold[0] || f.Hold > stallHold[1] {
						t.Errorf("%v seed %d: stall of %v", d, seed, f.Hold)
					}
				case FaultStreamTruncate:
					if f.Bytes < 1 || f.Bytes > maxTruncateBytes {
						t.Errorf("%v seed %d: truncation after %d bytes", d, seed, f.Bytes)
					}
				case FaultDiskFull:
					if f.At < d/4 || f.At > d*3/4 || f.Hold < diskFullHold[0] || f.Hold > diskFullHold[1] {
						t.Errorf("%v seed %d: disk full %+v", d, seed, f)
					}
				}
				if slices.Contains(f.While, FaultPageDamage) && (f.Kind != FaultKill || f.Again != 0) {
					t.Errorf("%v seed %d: page damage outside a kill, or followed by a second kill: %+v", d, seed, f)
				}
			}
			// Kills every one to three minutes.
			for i := 1; i < len(kills); i++ {
				if gap := kills[i] - kills[i-1]; gap < killEvery[0] || gap > killEvery[1] {
					t.Errorf("%v seed %d: kills %v apart", d, seed, gap)
				}
			}
		}
	}
}
