package scalebench

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"

	"github.com/warmcache/warmcache/benchmarks/internal/apiproc"
)

// envChild is the environment variable that makes a process one of the
// benchmark's children; its value is the child's spec in JSON.
const envChild = "WARMCACHE_SCALEBENCH_CHILD"

// Roles of a child process.
const (
	roleServer   = "server"
	roleInformer = "informer"
)

// childSpec tells a child what to do.
type childSpec struct {
	Role string `json:"role"`

	// Server: Pods podgen pods, or the resources of Mix when it has
	// objects. Informer of a factory mode: the resources it watches.
	Pods int `json:"pods,omitempty"`
	Mix  Mix `json:"mix"`

	// Informer.
	URL  string `json:"url,omitempty"`
	Impl string `json:"impl,omitempty"`
	// Mode is the sequence of phases: modeCold (cold, steady, relist),
	// modeWarmReplay, modeWarmNoHandler, modeFactoryCold, modeFactoryWarm,
	// modeFactoryWarmOne, modeFactorySteady.
	Mode string `json:"mode,omitempty"`
	Dir  string `json:"dir,omitempty"`
	N    int    `json:"n,omitempty"`
	// Updates is the number of updates of modeCold's steady state, or of
	// modeFactorySteady's, spread over the Mix's resources; Gen the
	// generation they change the objects to.
	Updates       int    `json:"updates,omitempty"`
	RelistPercent int    `json:"relistPercent,omitempty"`
	Gen           uint32 `json:"gen,omitempty"`
	// Resource is the one resource of modeFactoryWarmOne (its index in
	// Mix.Resources).
	Resource int `json:"resource,omitempty"`
	// QueueCapacity is the factory informers' queue capacity
	// (informer.Options.QueueCapacity), 0 for the default.
	QueueCapacity int `json:"queueCapacity,omitempty"`
	// QueueBudget is the factory's queue budget
	// (factory.Options.QueueBudget), 0 for the default, negative for none.
	QueueBudget int `json:"queueBudget,omitempty"`
	// PageSize is the factory informers' list page size
	// (reflector.Options.ListPageSize), 0 for the default.
	PageSize int `json:"pageSize,omitempty"`
	// MemoryBudget is the factory's memory budget in bytes
	// (factory.Options.MemoryBudget), 0 for none.
	MemoryBudget int64 `json:"memoryBudget,omitempty"`
	// Cgroup is a cgroup directory the child joins first, "" for none.
	Cgroup string `json:"cgroup,omitempty"`
}

// MaybeRun makes this process a child when the parent started it as one,
// runs it and exits; otherwise it returns at once. Call it first in main
// and TestMain.
func MaybeRun() {
	apiproc.RunChild(envChild, "scalebench", func(spec childSpec, in io.Reader, out io.Writer) error {
		var err error
		switch spec.Role {
		case roleServer:
			err = serveChild(spec, in, out)
		case roleInformer:
			err = informerChild(spec, out)
		default:
			err = fmt.Errorf("unknown role %q", spec.Role)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", spec.Role, err)
		}
		return nil
	})
}

// joinCgroup moves this process into the cgroup directory dir.
func joinCgroup(dir string) error {
	if dir == "" {
		return nil
	}
	if err := os.WriteFile(dir+"/cgroup.procs", []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		return fmt.Errorf("join cgroup: %w", err)
	}
	return nil
}

// writePhase writes p as one JSON line.
func writePhase(w io.Writer, p Phase) error {
	b, err := json.Marshal(p)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}
