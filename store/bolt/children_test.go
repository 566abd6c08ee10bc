package bolt

import (
	"fmt"
	"os"
)

// childEnv names the environment variable that makes the test binary run
// a child role instead of the tests; its value is the role.
const childEnv = "WARMCACHE_BOLT_TEST_CHILD"

// childRoles are the roles a child process can play.
var childRoles = map[string]func() error{}

// runChild runs the child role named by childEnv, if any, and exits.
func runChild() bool {
	role := os.Getenv(childEnv)
	if role == "" {
		return false
	}
	fn, ok := childRoles[role]
	if !ok {
		fmt.Fprintf(os.Stderr, "unknown child role %q\n", role)
		os.Exit(2)
	}
	if err := fn(); err != nil {
		fmt.Fprintf(os.Stderr, "child %s: %v\n", role, err)
		os.Exit(1)
	}
	os.Exit(0)
	return true
}
