package mutationtest

import (
	"os"
	"testing"

	"github.com/warmcache/warmcache/informer"
)

// Enable turns the detector on when the environment says nothing, and
// leaves a setting the environment gives alone.
func TestEnable(t *testing.T) {
	t.Setenv(informer.EnvMutationDetector, "")
	os.Unsetenv(informer.EnvMutationDetector)
	Enable()
	if got := os.Getenv(informer.EnvMutationDetector); got != "true" {
		t.Fatalf("%s = %q after Enable, want true", informer.EnvMutationDetector, got)
	}
	t.Setenv(informer.EnvMutationDetector, "false")
	Enable()
	if got := os.Getenv(informer.EnvMutationDetector); got != "false" {
		t.Fatalf("%s = %q after Enable with false set, want false kept", informer.EnvMutationDetector, got)
	}
}
