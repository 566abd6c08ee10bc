package democtl

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
)

// Exit codes of Main.
const (
	ExitOK    = 0 // ran until its context ended
	ExitError = 1 // Run failed
	ExitUsage = 2 // bad flags
)

// Main is the democtl command: it parses args (without the program
// name), runs the controller until ctx is done and returns the exit code.
// The event log "-" goes to stdout; diagnostics go to stderr.
//
// Flags:
//
//	--kubeconfig FILE   kubeconfig (default: $KUBECONFIG, ~/.kube/config, in-cluster)
//	--cache-file FILE   bbolt cache file (default: in-memory cache)
//	--namespace NS      watch one namespace (default: all)
//	--stats-file FILE   write Stats as JSON on exit
//	--event-log FILE    write each delivered event as a JSON line ("-": stdout)
//	--workers N         worker goroutines (default 2)
//
// plus klog's flags (-v and friends).
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("democtl", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		kubeconfig = fs.String("kubeconfig", "", "kubeconfig file (default: $KUBECONFIG, ~/.kube/config, then in-cluster config)")
		cfg        Config
		eventLog   string
	)
	fs.StringVar(&cfg.CacheFile, "cache-file", "", "bbolt file that keeps the cache across restarts (default: in-memory cache)")
	fs.StringVar(&cfg.Namespace, "namespace", "", "watch only this namespace (default: all)")
	fs.StringVar(&cfg.StatsFile, "stats-file", "", "write the run's stats as JSON to this file on exit")
	fs.StringVar(&eventLog, "event-log", "", `write every delivered event as a JSON line to this file ("-": stdout)`)
	fs.IntVar(&cfg.Workers, "workers", DefaultWorkers, "worker goroutines")
	klog.InitFlags(fs)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return ExitOK
		}
		return ExitUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "democtl: unexpected arguments %q\n", fs.Args())
		return ExitUsage
	}
	logger := klog.NewKlogr()
	ctx = klog.NewContext(ctx, logger)
	defer klog.Flush()

	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = *kubeconfig
	rc, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		fmt.Fprintf(stderr, "democtl: load kubeconfig: %v\n", err)
		return ExitUsage
	}
	cfg.RESTConfig = rc
	switch eventLog {
	case "":
	case "-":
		cfg.EventLog = stdout
	default:
		f, err := os.Create(eventLog)
		if err != nil {
			fmt.Fprintf(stderr, "democtl: event log: %v\n", err)
			return ExitUsage
		}
		defer f.Close()
		cfg.EventLog = f
	}
	if _, err := Run(ctx, cfg); err != nil {
		logger.Error(err, "Controller failed")
		if errors.Is(err, ErrInvalidConfig) {
			return ExitUsage
		}
		return ExitError
	}
	return ExitOK
}
