//go:build !race

package testkit

// raceDetector is whether the test binary was built with -race.
const raceDetector = false
