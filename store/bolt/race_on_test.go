//go:build race

package bolt

// raceEnabled is whether the tests run with the race detector, which slows
// bbolt and the codecs down about tenfold.
const raceEnabled = true
