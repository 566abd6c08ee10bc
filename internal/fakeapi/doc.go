// Package fakeapi serves the Kubernetes REST API over HTTP from an
// internal/fakesource.Source, so that real client-go clients — a clientset
// built by kubernetes.NewForConfig, client-go's informers, warmcache's
// informer — list and watch through the whole client stack: HTTP, content
// negotiation, protobuf or JSON decoding, watch framing.
//
// It serves, for each configured resource (pods by default):
//
//   - LIST:  GET /api/v1/pods and /api/v1/namespaces/{ns}/pods (for a
//     group: /apis/{group}/{version}/...), with limit, continue,
//     resourceVersion, resourceVersionMatch, labelSelector and
//     fieldSelector, as fakesource implements them;
//   - WATCH: the same paths with watch=true, with resourceVersion,
//     allowWatchBookmarks, sendInitialEvents (WatchList) and
//     timeoutSeconds;
//   - GET of one object: .../namespaces/{ns}/pods/{name};
//   - /version, and discovery (/api, /api/v1, /apis, /apis/{group},
//     /apis/{group}/{version}) enough for clientset and discovery clients.
//
// Content negotiation follows kube-apiserver: the first media type of the
// Accept header the server can produce wins (application/json,
// application/vnd.kubernetes.protobuf, */*); lists are encoded with
// apimachinery's serializers from client-go's scheme, and watch streams as
// kube-apiserver frames them: each event a metav1.WatchEvent encoded by the
// media type's stream serializer (length-delimited for protobuf, with the
// object embedded in the regular protobuf envelope), served as
// "application/vnd.kubernetes.protobuf;stream=watch" or
// "application/json". Kinds the scheme does not know (unstructured custom
// resources) are served as JSON only, as kube-apiserver serves custom
// resources.
//
// Errors are metav1.Status bodies with the status code of the API error
// (a 429 carries Retry-After). Errors that are no API error — fakesource's
// ConnectionRefused fault — abort the connection.
//
// A Handler is safe for concurrent use; a Server runs one on a loopback
// port until Close. fakeapi is for tests and benchmarks only: it does no
// authentication and serves reads only.
package fakeapi
