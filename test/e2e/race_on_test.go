//go:build race

package e2e

// raceEnabled says the tests run with the race detector; nested test runs
// get -race too.
const raceEnabled = true
