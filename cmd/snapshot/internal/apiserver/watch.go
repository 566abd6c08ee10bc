package apiserver

import (
	"bytes"
	"fmt"
	"net/http"
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/resourceversion"

	"github.com/warmcache/warmcache/store"
)

// watch answers WATCH of sel. The file does not change, so a watch has no event
// to send but the stored state, which it sends when the client asks for it
// (no resourceVersion or "0", or sendInitialEvents=true, then followed by
// the bookmark that ends the initial events); a watch from the file's
// resourceVersion or later sends nothing; one from an older
// resourceVersion is refused as expired (410), since the file does not
// know what changed since. Either way the watch stays open until the
// client goes away, timeoutSeconds pass or the server stops.
func (h *Handler) watch(w http.ResponseWriter, r *http.Request, req request, sel selection) {
	res := req.res
	q := r.URL.Query()
	rv := q.Get("resourceVersion")
	initial := rv == "" || rv == "0" || q.Get("sendInitialEvents") == "true"
	if !initial {
		c, err := resourceversion.CompareResourceVersion(rv, res.ResourceVersion)
		switch {
		case err != nil:
			writeError(w, badRequest("invalid resourceVersion %q: %v", rv, err))
			return
		case c < 0:
			writeStatus(w, http.StatusGone, metav1.StatusReasonExpired,
				fmt.Sprintf("too old resource version: %s (%s): the cache file holds %s", rv, res.ResourceVersion, groupResource(res)), nil)
			return
		}
	}
	var timeout <-chan time.Time
	if s := q.Get("timeoutSeconds"); s != "" {
		if n, err := strconv.ParseInt(s, 10, 64); err == nil && n > 0 {
			t := time.NewTimer(time.Duration(n) * time.Second)
			defer t.Stop()
			timeout = t.C
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Transfer-Encoding", "chunked")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	flush := func() {
		if flusher != nil {
			flusher.Flush()
		}
	}
	flush()
	var buf bytes.Buffer
	if initial {
		err := res.Store.Select(r.Context(), store.Selection{Namespace: sel.namespace, Labels: sel.labels}, func(_ string, item interface{}) error {
			obj, ok := item.(runtime.Object)
			if !ok || !sel.matches(res, obj) {
				return nil
			}
			buf.Reset()
			buf.WriteString(`{"type":"ADDED","object":`)
			if err := encodeObject(&buf, obj, res); err != nil {
				return err
			}
			buf.WriteString("}\n")
			_, err := w.Write(buf.Bytes())
			return err
		})
		if err != nil {
			if r.Context().Err() == nil {
				h.opts.Errors(fmt.Errorf("watch %s: the initial events ended early: %w", groupResource(res), err))
			}
			return
		}
		if q.Get("sendInitialEvents") == "true" {
			fmt.Fprintf(w, `{"type":"BOOKMARK","object":{"kind":%q,"apiVersion":%q,"metadata":{"resourceVersion":%q,"annotations":{%q:"true"}}}}`+"\n",
				res.Kind, res.GVR.GroupVersion().String(), res.ResourceVersion, metav1.InitialEventsAnnotationKey)
		}
		flush()
	}
	select {
	case <-r.Context().Done():
	case <-timeout:
	}
}
