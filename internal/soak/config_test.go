package soak

import (
	"bytes"
	"errors"
	"io"
	"testing"
	"time"
)

// withDefaults fills the zero fields only, and refuses what is missing or
// negative.
func TestConfigWithDefaults(t *testing.T) {
	required := Config{ReportDir: "r", Snapshot: "s", ControllerCommand: "c"}
	c, err := required.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if c.Duration != DefaultDuration || c.ConvergeTimeout != DefaultConvergeTimeout || c.SampleInterval != DefaultSampleInterval ||
		c.Rate != DefaultRate || c.Objects != DefaultObjects || c.Workers != DefaultWorkers || c.DiskSize != DefaultDiskSize ||
		c.Progress != io.Discard || c.Disk != DiskAuto {
		t.Errorf("defaults = %+v", c)
	}

	var progress bytes.Buffer
	set := required
	set.Duration, set.ConvergeTimeout, set.SampleInterval = time.Minute, 2*time.Minute, 3*time.Second
	set.Rate, set.Objects, set.Workers, set.DiskSize, set.Progress = 1.5, 7, 3, 1<<20, &progress
	c, err = set.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if c.Duration != time.Minute || c.ConvergeTimeout != 2*time.Minute || c.SampleInterval != 3*time.Second ||
		c.Rate != 1.5 || c.Objects != 7 || c.Workers != 3 || c.DiskSize != 1<<20 || c.Progress != &progress {
		t.Errorf("given values changed: %+v", c)
	}

	for _, bad := range []Config{{Snapshot: "s", ControllerCommand: "c"}, func() Config { b := required; b.Workers = -1; return b }()} {
		if _, err := bad.withDefaults(); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("withDefaults(%+v) = %v, want ErrInvalidConfig", bad, err)
		}
	}
}
