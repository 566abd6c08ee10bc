package bolt

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

// TestMain runs the tests with a goroutine leak check, unless the binary was
// started as a child process by a test (see children_test.go).
func TestMain(m *testing.M) {
	if runChild() {
		return
	}
	goleak.VerifyTestMain(m)
	os.Exit(0)
}
