package testkit

import (
	"fmt"
	"os"
	"time"
)

// DefaultTimeout is Timeout in a test binary built without the race
// detector: client-go's wait.ForeverTestTimeout.
const DefaultTimeout = 30 * time.Second

// raceFactor is how much longer Timeout is in a test binary built with the
// race detector (go test -race, as make test runs every test), which runs
// code several times slower.
const raceFactor = 3

// EnvTimeout is the environment variable that sets Timeout, as a Go
// duration ("2m"), for a machine slower or busier than the default
// allows for.
const EnvTimeout = "WARMCACHE_TEST_TIMEOUT"

var timeout = timeoutFrom(os.Getenv(EnvTimeout), raceDetector)

// Timeout bounds one wait of a test on something another goroutine,
// process or server does: an event, a sync, a goroutine's return.
// Reaching it fails the test; it is never a synchronisation point, so a
// longer one only makes a failing test report later. It is
// DefaultTimeout, three times that under the race detector, or the
// duration in $WARMCACHE_TEST_TIMEOUT.
func Timeout() time.Duration { return timeout }

// timeoutFrom is Timeout given the value of EnvTimeout and whether the
// race detector is on. A value that is not a positive duration panics: a
// test binary that cannot honour it stops before any test runs.
func timeoutFrom(env string, race bool) time.Duration {
	if env != "" {
		d, err := time.ParseDuration(env)
		if err != nil || d <= 0 {
			panic(fmt.Sprintf("testkit: %s=%q is not a positive duration", EnvTimeout, env))
		}
		return d
	}
	if race {
		return raceFactor * DefaultTimeout
	}
	return DefaultTimeout
}
