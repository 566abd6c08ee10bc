package soak

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"time"
)

// ErrInvalidConfig reports a Config Run cannot use.
var ErrInvalidConfig = errors.New("soak: invalid config")

// Defaults of Config.
const (
	DefaultDuration        = time.Hour
	DefaultRate            = 200
	DefaultObjects         = 1000
	DefaultWorkers         = 16
	DefaultConvergeTimeout = 3 * time.Minute
	DefaultDiskSize        = 512 << 20
	DefaultSampleInterval  = 2 * time.Second
)

// Config configures Run.
type Config struct {
	// Duration is the length of the fault schedule; the run takes a few
	// minutes more (start, population, final checks). Default
	// DefaultDuration.
	Duration time.Duration
	// Seed draws the fault schedule (the churn's timing is not
	// reproducible). Default 0 is a seed like any other.
	Seed uint64
	// Rate is the churn's target of requests per second (creates,
	// updates and deletes). Default DefaultRate.
	Rate float64
	// Objects is about how many objects of each resource the churn keeps.
	// Default DefaultObjects.
	Objects int
	// Workers is the churn's concurrent requests. Default DefaultWorkers.
	Workers int
	// ReportDir receives the report (required); it is created if
	// missing.
	ReportDir string
	// WorkDir holds the cluster, the cache file and the logs. Default: a
	// new temporary directory, removed at the end unless Keep.
	WorkDir string
	// Keep keeps the WorkDir Run created.
	Keep bool
	// Snapshot is the snapshot CLI binary (required).
	Snapshot string
	// ControllerCommand is a binary that runs soakctl.Main with its
	// arguments, with ControllerEnv added to its environment (required).
	ControllerCommand string
	ControllerEnv     []string
	// Disk is how the disk is filled: DiskAuto, DiskTmpfs, DiskRlimit or
	// DiskNone. Default DiskAuto.
	Disk string
	// PrivateMounts says the process runs in a mount namespace of its
	// own, where the soak may mount a tmpfs (the soak command re-executes
	// itself into new user and mount namespaces). DiskTmpfs requires it.
	PrivateMounts bool
	// DiskSize is the tmpfs's size. Default DefaultDiskSize.
	DiskSize int64
	// ConvergeTimeout bounds the wait for the controller to equal the
	// server after a fault. Default DefaultConvergeTimeout.
	ConvergeTimeout time.Duration
	// SampleInterval is the period of the RSS, goroutine and file size
	// samples. Default DefaultSampleInterval.
	SampleInterval time.Duration
	// Progress receives a line per step. Default: io.Discard.
	Progress io.Writer
}

func (c Config) withDefaults() (Config, error) {
	switch {
	case c.ReportDir == "":
		return c, fmt.Errorf("%w: ReportDir is required", ErrInvalidConfig)
	case c.Snapshot == "":
		return c, fmt.Errorf("%w: Snapshot is required", ErrInvalidConfig)
	case c.ControllerCommand == "":
		return c, fmt.Errorf("%w: ControllerCommand is required", ErrInvalidConfig)
	case c.Duration < 0 || c.Rate < 0 || c.Objects < 0 || c.Workers < 0 || c.DiskSize < 0 || c.ConvergeTimeout < 0 || c.SampleInterval < 0:
		return c, fmt.Errorf("%w: negative duration, rate, objects, workers, disk size, timeout or interval", ErrInvalidConfig)
	}
	switch c.Disk {
	case "":
		c.Disk = DiskAuto
	case DiskAuto, DiskRlimit, DiskNone:
	case DiskTmpfs:
		if !c.PrivateMounts {
			return c, fmt.Errorf("%w: a tmpfs disk needs a mount namespace of the soak's own (PrivateMounts)", ErrInvalidConfig)
		}
	default:
		return c, fmt.Errorf("%w: Disk %q is none of %s, %s, %s, %s", ErrInvalidConfig, c.Disk, DiskAuto, DiskTmpfs, DiskRlimit, DiskNone)
	}
	c.Duration = cmp.Or(c.Duration, DefaultDuration)
	c.ConvergeTimeout = cmp.Or(c.ConvergeTimeout, DefaultConvergeTimeout)
	c.SampleInterval = cmp.Or(c.SampleInterval, DefaultSampleInterval)
	c.Rate = cmp.Or(c.Rate, DefaultRate)
	c.Objects = cmp.Or(c.Objects, DefaultObjects)
	c.Workers = cmp.Or(c.Workers, DefaultWorkers)
	c.DiskSize = cmp.Or(c.DiskSize, DefaultDiskSize)
	c.Progress = cmp.Or(c.Progress, io.Discard)
	return c, nil
}
