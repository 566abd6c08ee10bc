package demo

import (
	"errors"
	"os"
	"strings"
	"testing"
)

// withDefaults fills the zero fields only, and refuses what is out of range.
func TestOptionsWithDefaults(t *testing.T) {
	o, err := Options{}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if o.Pods != DefaultPods || o.ChangeFraction != DefaultChangeFraction || o.Workers != DefaultWorkers ||
		o.Out != os.Stdout || o.Progress != os.Stderr {
		t.Errorf("defaults = %+v", o)
	}
	var out, progress strings.Builder
	o, err = Options{Pods: 3, ChangeFraction: 0.25, Workers: 2, Out: &out, Progress: &progress}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if o.Pods != 3 || o.ChangeFraction != 0.25 || o.Workers != 2 || o.Out != &out || o.Progress != &progress {
		t.Errorf("given values changed: %+v", o)
	}
	for _, bad := range []Options{{Pods: -1}, {ChangeFraction: 0.6}} {
		if _, err := bad.withDefaults(); !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("withDefaults(%+v) = %v, want ErrInvalidOptions", bad, err)
		}
	}
}
