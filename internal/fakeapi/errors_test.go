package fakeapi

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/warmcache/warmcache/internal/fakesource"
)

// get sends a raw GET and returns the response and its body.
func get(t *testing.T, method, url, accept string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, body
}

func TestErrorResponses(t *testing.T) {
	const jsonType = "application/json"
	tests := []struct {
		name       string
		method     string
		path       string
		accept     string
		fault      func(*fakesource.Source)
		code       int
		reason     metav1.StatusReason
		retryAfter string
	}{
		{name: "unknown path", path: "/nope", code: http.StatusNotFound, reason: metav1.StatusReasonNotFound},
		{name: "unknown resource", path: "/api/v1/widgets", code: http.StatusNotFound, reason: metav1.StatusReasonNotFound},
		{name: "unknown group", path: "/apis/example.com/v1/pods", code: http.StatusNotFound, reason: metav1.StatusReasonNotFound},
		{name: "namespaced object without namespace", path: "/api/v1/pods/x", code: http.StatusNotFound, reason: metav1.StatusReasonNotFound},
		{name: "too deep", path: "/api/v1/namespaces/ns-000/pods/x/status", code: http.StatusNotFound, reason: metav1.StatusReasonNotFound},
		{name: "missing object", path: "/api/v1/namespaces/ns-000/pods/missing", code: http.StatusNotFound, reason: metav1.StatusReasonNotFound},
		{name: "write", method: http.MethodPost, path: "/api/v1/pods", code: http.StatusMethodNotAllowed, reason: metav1.StatusReasonMethodNotAllowed},
		{name: "bad limit", path: "/api/v1/pods?limit=many", code: http.StatusBadRequest, reason: metav1.StatusReasonBadRequest},
		{name: "match without resourceVersion", path: "/api/v1/pods?resourceVersionMatch=Exact", code: http.StatusUnprocessableEntity, reason: metav1.StatusReasonInvalid},
		{name: "not acceptable", path: "/api/v1/pods", accept: "text/html", code: http.StatusNotAcceptable, reason: metav1.StatusReasonNotAcceptable},
		{name: "watch in yaml", path: "/api/v1/pods?watch=true", accept: "application/yaml", code: http.StatusNotAcceptable, reason: metav1.StatusReasonNotAcceptable},
		{name: "table", path: "/api/v1/pods", accept: "application/json;as=Table;v=v1;g=meta.k8s.io", code: http.StatusNotAcceptable, reason: metav1.StatusReasonNotAcceptable},
		{
			name: "throttled", path: "/api/v1/pods",
			fault: func(s *fakesource.Source) { s.FailLists(1, fakesource.TooManyRequests(3)) },
			code:  http.StatusTooManyRequests, reason: metav1.StatusReasonTooManyRequests, retryAfter: "3",
		},
		{
			name: "internal error in protobuf", path: "/api/v1/pods?watch=1", accept: "application/vnd.kubernetes.protobuf",
			fault: func(s *fakesource.Source) { s.FailWatches(1, fakesource.Fault{Err: fakesource.InternalError("boom")}) },
			code:  http.StatusInternalServerError, reason: metav1.StatusReasonInternalError,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := newSource(t, 2)
			if tt.fault != nil {
				tt.fault(src)
			}
			s := startServer(t, Options{Source: src})
			method := tt.method
			if method == "" {
				method = http.MethodGet
			}
			resp, body := get(t, method, s.URL+tt.path, tt.accept)
			if resp.StatusCode != tt.code {
				t.Fatalf("status %d, want %d; body %s", resp.StatusCode, tt.code, body)
			}
			if got := resp.Header.Get("Retry-After"); got != tt.retryAfter {
				t.Errorf("Retry-After %q, want %q", got, tt.retryAfter)
			}
			wantType := jsonType
			if strings.Contains(tt.accept, "protobuf") {
				wantType = runtime.ContentTypeProtobuf
			}
			if ct := resp.Header.Get("Content-Type"); ct != wantType {
				t.Errorf("Content-Type %q, want %q", ct, wantType)
			}
			obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(body, nil, nil)
			if err != nil {
				t.Fatalf("body is no object: %v: %s", err, body)
			}
			st, ok := obj.(*metav1.Status)
			if !ok {
				t.Fatalf("body is a %T", obj)
			}
			if st.Reason != tt.reason || int(st.Code) != tt.code {
				t.Errorf("status reason %q code %d, want %q %d", st.Reason, st.Code, tt.reason, tt.code)
			}
		})
	}
}

func TestConnectionFaultAbortsTheConnection(t *testing.T) {
	src := newSource(t, 2)
	src.FailLists(1, fakesource.ConnectionRefused())
	s := startServer(t, Options{Source: src})
	cs := clientset(t, s, "application/vnd.kubernetes.protobuf", nil)
	// client-go retries a GET whose connection broke; ask once.
	err := cs.CoreV1().RESTClient().Get().Resource("pods").MaxRetries(0).Do(context.Background()).Error()
	var st apierrors.APIStatus
	if err == nil || errors.As(err, &st) {
		t.Fatalf("list through an aborted connection: %v, want a transport error", err)
	}
	// The fault was used up; the next list works.
	if _, err := cs.CoreV1().Pods("").List(context.Background(), metav1.ListOptions{}); err != nil {
		t.Errorf("list after the fault: %v", err)
	}
}
