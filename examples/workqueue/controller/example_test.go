package controller_test

import (
	"context"
	"fmt"
	"os"
	"os/signal"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/warmcache/warmcache/examples/workqueue/controller"
)

// Run the controller on a cache file until Ctrl-C, then print what the
// run cost. Run it twice: the second run replays the file and resumes the
// watch instead of listing every pod. (The example only compiles: running
// it needs a cluster.)
func ExampleRun() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	rc, err := clientcmd.BuildConfigFromFlags("", os.Getenv("KUBECONFIG"))
	if err != nil {
		fmt.Println(err)
		return
	}
	st, err := controller.Run(ctx, controller.Config{RESTConfig: rc, CacheFile: "pods.db", StatsFile: "stats.json"})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("warm start %v: synced in %.1fs after %d LIST requests, %d bytes received, %d events\n",
		st.WarmStart, st.SyncedSeconds, st.ListRequests, st.BytesReceived, st.Events.Total())
}
