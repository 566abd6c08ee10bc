package apiserver

import (
	"fmt"
	"net/http"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// namespace answers GET of a namespace when the file does not hold
// namespaces: a namespace exists when objects of a served resource are
// stored in it, and is then answered as a Namespace with its name alone
// (Active); otherwise it is not found. kubectl asks for the namespace of
// an object it did not find, to say whether the namespace is missing.
func (h *Handler) namespace(w http.ResponseWriter, name string) {
	for _, r := range h.opts.Resources {
		if !r.Namespaced || r.Store == nil {
			continue
		}
		for _, k := range r.Store.ListKeys() {
			if strings.HasPrefix(k, name+"/") {
				writeJSON(w, http.StatusOK, &corev1.Namespace{
					TypeMeta:   metav1.TypeMeta{Kind: "Namespace", APIVersion: "v1"},
					ObjectMeta: metav1.ObjectMeta{Name: name},
					Status:     corev1.NamespaceStatus{Phase: corev1.NamespaceActive},
				})
				return
			}
		}
	}
	writeStatus(w, http.StatusNotFound, metav1.StatusReasonNotFound, fmt.Sprintf("namespaces %q not found", name), &details{Name: name, Kind: "namespaces"})
}
