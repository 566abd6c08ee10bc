package apiserver

import (
	"encoding/json"
	"net/http"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// details names the object of a Status.
type details = metav1.StatusDetails

// writeStatus answers with a failure Status of code, as an API server's
// errors are (kubectl prints them as "Error from server (REASON):
// MESSAGE").
func writeStatus(w http.ResponseWriter, code int, reason metav1.StatusReason, message string, d *details) {
	st := metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusFailure,
		Message:  message,
		Reason:   reason,
		Details:  d,
		Code:     int32(code),
	}
	writeJSON(w, code, &st)
}

// notFound is the answer to a path the server does not serve.
func notFound(w http.ResponseWriter) {
	writeStatus(w, http.StatusNotFound, metav1.StatusReasonNotFound, "the server could not find the requested resource", nil)
}

// writeJSON answers with v as JSON.
func writeJSON(w http.ResponseWriter, code int, v interface{}) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = w.Write(b)
}
