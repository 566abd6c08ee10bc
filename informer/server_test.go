package informer

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/warmcache/warmcache/internal/fakesource"
)

// serveSource serves the pods of src over HTTP as kube-apiserver's
// /api/v1/pods and /api/v1/namespaces/<ns>/pods do (JSON lists and
// watches), so that informers in other processes, or built on client-go's
// REST clients, can use it.
func serveSource(t *testing.T, src *fakesource.Source) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ns, ok := podsNamespace(r.URL.Path)
		if !ok {
			http.NotFound(w, r)
			return
		}
		var opts metav1.ListOptions
		if err := scheme.ParameterCodec.DecodeParameters(r.URL.Query(), corev1.SchemeGroupVersion, &opts); err != nil {
			writeStatus(w, apierrors.NewBadRequest(err.Error()))
			return
		}
		ep := src.Endpoint(podGVK, ns)
		if !opts.Watch {
			obj, err := ep.ListWithContext(r.Context(), opts)
			if err != nil {
				writeStatus(w, err)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			_ = encode(w, obj)
			return
		}
		wi, err := ep.WatchWithContext(r.Context(), opts)
		if err != nil {
			writeStatus(w, err)
			return
		}
		defer wi.Stop()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		flusher := w.(http.Flusher)
		flusher.Flush()
		for {
			select {
			case <-r.Context().Done():
				return
			case ev, ok := <-wi.ResultChan():
				if !ok {
					return
				}
				raw, err := runtime.Encode(scheme.Codecs.LegacyCodec(corev1.SchemeGroupVersion), ev.Object)
				if err != nil {
					t.Errorf("encode watch event: %v", err)
					return
				}
				if err := json.NewEncoder(w).Encode(metav1.WatchEvent{Type: string(ev.Type), Object: runtime.RawExtension{Raw: raw}}); err != nil {
					return
				}
				flusher.Flush()
			}
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

func podsNamespace(path string) (string, bool) {
	if path == "/api/v1/pods" {
		return "", true
	}
	rest, ok := strings.CutPrefix(path, "/api/v1/namespaces/")
	if !ok {
		return "", false
	}
	ns, res, ok := strings.Cut(rest, "/")
	return ns, ok && res == "pods"
}

func encode(w http.ResponseWriter, obj runtime.Object) error {
	return scheme.Codecs.LegacyCodec(corev1.SchemeGroupVersion).Encode(obj, w)
}

func writeStatus(w http.ResponseWriter, err error) {
	var st apierrors.APIStatus
	if !errors.As(err, &st) {
		st = apierrors.NewInternalError(err)
	}
	s := st.Status()
	s.APIVersion, s.Kind = "v1", "Status"
	w.Header().Set("Content-Type", "application/json")
	code := int(s.Code)
	if code == 0 {
		code = http.StatusInternalServerError
	}
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(&s)
}
