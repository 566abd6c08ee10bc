package fakeapi

import (
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/version"

	"github.com/warmcache/warmcache/internal/fakesource"
	"github.com/warmcache/warmcache/internal/httpjson"
)

// Handler is an http.Handler serving the Kubernetes API from a
// fakesource.Source (see the package documentation). It is safe for
// concurrent use.
type Handler struct {
	src       *fakesource.Source
	scheme    *runtime.Scheme
	codecs    runtime.NegotiatedSerializer
	version   version.Info
	resources map[schema.GroupVersionResource]Resource
	// groups lists the served group versions, sorted, core first.
	groups []schema.GroupVersion

	// mu guards closed and the additions to inflight: once closed is set,
	// no request is added, so that Server.Close may wait for inflight.
	mu     sync.Mutex
	closed bool
	// inflight counts requests being served, so that Server.Close can
	// wait for watches to end.
	inflight sync.WaitGroup
}

var _ http.Handler = (*Handler)(nil)

// NewHandler returns a Handler configured by opts.
func NewHandler(opts Options) (*Handler, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	h := &Handler{
		src:       o.Source,
		scheme:    o.Scheme,
		codecs:    serializer.NewCodecFactory(o.Scheme).WithoutConversion(),
		version:   *o.Version,
		resources: map[schema.GroupVersionResource]Resource{},
	}
	seen := map[schema.GroupVersion]bool{}
	for _, r := range o.Resources {
		h.resources[r.GroupVersionResource] = r
		if gv := r.GroupVersion(); !seen[gv] {
			seen[gv] = true
			h.groups = append(h.groups, gv)
		}
	}
	sort.Slice(h.groups, func(i, j int) bool {
		a, b := h.groups[i], h.groups[j]
		if a.Group != b.Group {
			return a.Group < b.Group
		}
		return a.Version < b.Version
	})
	return h, nil
}

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !h.begin() {
		h.writeError(w, r, apierrors.NewServiceUnavailable("the server is shutting down"))
		return
	}
	defer h.inflight.Done()
	if r.Method != http.MethodGet {
		h.writeError(w, r, apierrors.NewMethodNotSupported(schema.GroupResource{}, r.Method))
		return
	}
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	switch {
	case len(parts) == 1 && parts[0] == "version":
		httpjson.Write(w, h.version)
	case parts[0] == "api" && len(parts) == 1:
		httpjson.Write(w, h.apiVersions(r))
	case parts[0] == "api" && len(parts) == 2 && h.servesGroupVersion(schema.GroupVersion{Version: parts[1]}):
		httpjson.Write(w, h.resourceList(schema.GroupVersion{Version: parts[1]}))
	case parts[0] == "api" && len(parts) > 2:
		h.serveResource(w, r, schema.GroupVersion{Version: parts[1]}, parts[2:])
	case parts[0] == "apis" && len(parts) == 1:
		httpjson.Write(w, h.groupList())
	case parts[0] == "apis" && len(parts) == 2 && h.group(parts[1]) != nil:
		httpjson.Write(w, h.group(parts[1]))
	case parts[0] == "apis" && len(parts) == 3 && h.servesGroupVersion(schema.GroupVersion{Group: parts[1], Version: parts[2]}):
		httpjson.Write(w, h.resourceList(schema.GroupVersion{Group: parts[1], Version: parts[2]}))
	case parts[0] == "apis" && len(parts) > 3:
		h.serveResource(w, r, schema.GroupVersion{Group: parts[1], Version: parts[2]}, parts[3:])
	default:
		h.writeError(w, r, notFound(r))
	}
}

// begin counts a request in, unless the handler was shut down.
func (h *Handler) begin() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return false
	}
	h.inflight.Add(1)
	return true
}

// shutdown refuses new requests and waits for those being served.
func (h *Handler) shutdown() {
	h.mu.Lock()
	h.closed = true
	h.mu.Unlock()
	h.inflight.Wait()
}

func notFound(r *http.Request) error {
	return apierrors.NewGenericServerResponse(http.StatusNotFound, r.Method, schema.GroupResource{}, "",
		fmt.Sprintf("the server could not find the requested resource (%s)", r.URL.Path), 0, false)
}

func (h *Handler) servesGroupVersion(gv schema.GroupVersion) bool {
	for _, g := range h.groups {
		if g == gv {
			return true
		}
	}
	return false
}

// serveResource routes {resource}, {resource}/{name},
// namespaces/{ns}/{resource} and namespaces/{ns}/{resource}/{name}.
func (h *Handler) serveResource(w http.ResponseWriter, r *http.Request, gv schema.GroupVersion, rest []string) {
	for _, p := range rest {
		if p == "" {
			h.writeError(w, r, notFound(r))
			return
		}
	}
	var ns, name, resource string
	switch {
	case len(rest) >= 3 && len(rest) <= 4 && rest[0] == "namespaces":
		ns, resource = rest[1], rest[2]
		if len(rest) == 4 {
			name = rest[3]
		}
	case len(rest) <= 2:
		resource = rest[0]
		if len(rest) == 2 {
			name = rest[1]
		}
	default:
		h.writeError(w, r, notFound(r))
		return
	}
	res, ok := h.resources[gv.WithResource(resource)]
	switch {
	case !ok,
		ns != "" && !res.Namespaced,              // a namespace path for a cluster-scoped resource
		name != "" && ns == "" && res.Namespaced: // one namespaced object without its namespace
		h.writeError(w, r, notFound(r))
	case name != "":
		h.serveGet(w, r, res, ns, name)
	default:
		h.serveCollection(w, r, res, ns)
	}
}

// apiVersions is the /api document.
func (h *Handler) apiVersions(r *http.Request) *metav1.APIVersions {
	v := &metav1.APIVersions{
		TypeMeta: metav1.TypeMeta{Kind: "APIVersions"},
		ServerAddressByClientCIDRs: []metav1.ServerAddressByClientCIDR{
			{ClientCIDR: "0.0.0.0/0", ServerAddress: r.Host},
		},
	}
	for _, gv := range h.groups {
		if gv.Group == "" {
			v.Versions = append(v.Versions, gv.Version)
		}
	}
	return v
}

// group returns the /apis/{group} document, nil for a group not served.
func (h *Handler) group(name string) *metav1.APIGroup {
	var g *metav1.APIGroup
	for _, gv := range h.groups {
		if gv.Group != name || name == "" {
			continue
		}
		if g == nil {
			g = &metav1.APIGroup{TypeMeta: metav1.TypeMeta{Kind: "APIGroup", APIVersion: "v1"}, Name: name}
		}
		v := metav1.GroupVersionForDiscovery{GroupVersion: gv.String(), Version: gv.Version}
		g.Versions = append(g.Versions, v)
	}
	if g != nil {
		g.PreferredVersion = g.Versions[0]
	}
	return g
}

// groupList is the /apis document.
func (h *Handler) groupList() *metav1.APIGroupList {
	l := &metav1.APIGroupList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"}, Groups: []metav1.APIGroup{}}
	for _, gv := range h.groups {
		if gv.Group == "" || (len(l.Groups) > 0 && l.Groups[len(l.Groups)-1].Name == gv.Group) {
			continue
		}
		l.Groups = append(l.Groups, *h.group(gv.Group))
	}
	return l
}

// resourceList is the /api/{version} or /apis/{group}/{version} document.
func (h *Handler) resourceList(gv schema.GroupVersion) *metav1.APIResourceList {
	l := &metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}, GroupVersion: gv.String()}
	for gvr, r := range h.resources {
		if gvr.GroupVersion() != gv {
			continue
		}
		l.APIResources = append(l.APIResources, metav1.APIResource{
			Name:         gvr.Resource,
			SingularName: strings.ToLower(r.Kind),
			Namespaced:   r.Namespaced,
			Kind:         r.Kind,
			Verbs:        metav1.Verbs{"get", "list", "watch"},
		})
	}
	sort.Slice(l.APIResources, func(i, j int) bool { return l.APIResources[i].Name < l.APIResources[j].Name })
	return l
}
