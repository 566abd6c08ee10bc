package apiproc

import (
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/warmcache/warmcache/benchmarks/internal/genserver"
	"github.com/warmcache/warmcache/internal/httpjson"
)

// serveGen runs a genserver of n podgen pods with this package's control
// API, writes its URL to out and serves until in reaches EOF.
func serveGen(n int, in io.Reader, out io.Writer) error {
	gone := ParentGone(in)
	s, err := genserver.New(genserver.Pods(n))
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.HandleFunc(genserver.ControlPrefix+"churn", func(w http.ResponseWriter, r *http.Request) {
		n, gen, hot, ok := churnQuery(w, r)
		if !ok {
			return
		}
		start := time.Now()
		res, err := s.Churn("", n, uint32(gen), hot)
		if err != nil {
			fail(w, http.StatusBadRequest, "%s: %v", ServerGen, err)
			return
		}
		httpjson.Write(w, ChurnResult{
			FirstRV: strconv.FormatInt(res.FirstRV, 10),
			LastRV:  strconv.FormatInt(res.LastRV, 10),
			Seconds: time.Since(start).Seconds(),
		})
	})
	mux.HandleFunc(genserver.ControlPrefix+"open", func(w http.ResponseWriter, _ *http.Request) {
		s.Open()
		httpjson.Write(w, struct{}{})
	})
	mux.HandleFunc(genserver.ControlPrefix+"compact", func(w http.ResponseWriter, r *http.Request) {
		var rv int64
		if q := r.URL.Query().Get("rv"); q != "" {
			v, err := strconv.ParseInt(q, 10, 64)
			if err != nil {
				fail(w, http.StatusBadRequest, "invalid resourceVersion %q", q)
				return
			}
			rv = v
		}
		if err := s.Compact(rv); err != nil {
			fail(w, http.StatusBadRequest, "%v", err)
			return
		}
		httpjson.Write(w, struct{}{})
	})
	mux.HandleFunc(genserver.ControlPrefix+"restart", func(w http.ResponseWriter, _ *http.Request) {
		s.Restart()
		httpjson.Write(w, struct{}{})
	})
	mux.HandleFunc(genserver.ControlPrefix+"stats", func(w http.ResponseWriter, _ *http.Request) {
		st := s.Stats()
		httpjson.Write(w, Stats{
			ResourceVersion: strconv.FormatInt(st.ResourceVersion, 10),
			Lists:           st.Lists,
			Watches:         st.Watches,
			WatchLists:      st.WatchLists,
			OpenWatches:     st.OpenWatches,
		})
	})
	mux.Handle("/", s)
	// Restart ends every watch, so that the shutdown need not wait.
	return ServeLoopback(mux, out, gone, func() { s.Open(); s.Restart() })
}
