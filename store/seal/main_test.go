package seal_test

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"
)

// childEnv names the environment variable that makes the test binary run
// the re-encryption child of TestKillDuringReencryption instead of the
// tests.
const childEnv = "WARMCACHE_SEAL_TEST_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		if err := reencryptChild(); err != nil {
			fmt.Fprintf(os.Stderr, "child: %v\n", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}
