// Package apiserver serves the objects of a cache file as a read-only
// Kubernetes API, so that kubectl, client-go programs and other tools read
// a snapshot as they read a cluster.
//
// It serves discovery (/api, /apis, each group and version with the
// resources the file holds), GET of an object, LIST with label and field
// selectors pushed down to the store, limit and continue, server-side
// tables (as=Table, with the CLI's columns per kind), and WATCH, which
// sends the stored state (ADDED events, and with sendInitialEvents the
// bookmark that ends them) and stays open: the file does not change. A file
// without namespaces answers GET of a namespace that holds stored objects
// with a Namespace of that name (kubectl asks, to tell a missing object
// from a missing namespace). Every
// other method is refused with 405 MethodNotAllowed. Errors are
// metav1.Status objects, as an API server's.
//
// Objects are served as JSON whatever the client accepts (client-go
// decodes by the response's content type). A Handler is safe for
// concurrent use; it reads the stores its Resources give, which must be
// too (*bolt.Store is).
package apiserver

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/warmcache/warmcache/cmd/snapshot/internal/printers"
	"github.com/warmcache/warmcache/store"
)

// Reader is what the server reads of a stored resource; *bolt.Store
// implements it.
type Reader interface {
	// GetByKey returns the object stored under key.
	GetByKey(key string) (item interface{}, exists bool, err error)
	// ListKeys returns every key.
	ListKeys() []string
	// Select calls fn for each object sel selects, in key order.
	Select(ctx context.Context, sel store.Selection, fn store.ScanFunc) error
}

// Resource is one resource the server serves.
type Resource struct {
	// GVR is the resource's group, version and plural name.
	GVR schema.GroupVersionResource
	// Kind, Singular and ShortNames are the names discovery gives.
	Kind       string
	Singular   string
	ShortNames []string
	// Categories are the resource's categories (kubectl get all).
	Categories []string
	// Namespaced tells whether objects have a namespace (their keys are
	// namespace/name).
	Namespaced bool
	// ResourceVersion is the resourceVersion the file recorded: lists
	// and watches are at it.
	ResourceVersion string
	// Store reads the objects; nil when Forbidden says why they are not
	// served.
	Store Reader
	// Forbidden, when set, is why the objects are not served (a sealed
	// resource without its key): requests get 403 Forbidden with it.
	Forbidden string
	// Table renders the as=Table form of the objects.
	Table *printers.ServerTable
	// Fields returns the fields a field selector may select of an object;
	// FieldNames lists them (others are refused, as an API server refuses
	// them).
	Fields     func(obj runtime.Object) fields.Set
	FieldNames []string
}

// Options configures New.
type Options struct {
	// Resources are the resources served (required, at least one).
	Resources []Resource
	// Token, when set, is the bearer token every request must carry;
	// others get 401 Unauthorized. Default "": no authentication (serve
	// on loopback only).
	Token string
	// Now is the clock of the tables' AGE column. Default time.Now.
	Now func() time.Time
	// Version is what /version answers as gitVersion. Default
	// "v0.0.0-snapshot".
	Version string
	// Errors receives the errors that happen once a response has begun
	// (a list or watch whose store fails mid-stream), which the client
	// sees only as a list that ends early. Default: dropped.
	Errors func(error)
}

// ErrInvalidOptions is returned by New for options that cannot work.
var ErrInvalidOptions = errors.New("apiserver: invalid options")

// Handler is the read-only API.
type Handler struct {
	opts Options
	// byPath finds a resource by group, version and plural.
	byPath map[schema.GroupVersionResource]*Resource
}

// New returns the handler of opts.
func New(opts Options) (*Handler, error) {
	if len(opts.Resources) == 0 {
		return nil, fmt.Errorf("%w: no resources", ErrInvalidOptions)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Version == "" {
		opts.Version = "v0.0.0-snapshot"
	}
	if opts.Errors == nil {
		opts.Errors = func(error) {}
	}
	h := &Handler{opts: opts, byPath: map[schema.GroupVersionResource]*Resource{}}
	for i := range opts.Resources {
		r := &h.opts.Resources[i]
		if r.GVR.Version == "" || r.GVR.Resource == "" || r.Kind == "" || (r.Store == nil && r.Forbidden == "") || r.Table == nil {
			return nil, fmt.Errorf("%w: resource %v needs a version, a resource, a kind, a table and a store or a reason", ErrInvalidOptions, r.GVR)
		}
		if _, dup := h.byPath[r.GVR]; dup {
			return nil, fmt.Errorf("%w: resource %v twice", ErrInvalidOptions, r.GVR)
		}
		h.byPath[r.GVR] = r
	}
	return h, nil
}

// ServeHTTP answers one request.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h.opts.Token != "" && !h.authorized(r) {
		writeStatus(w, http.StatusUnauthorized, "Unauthorized", "Unauthorized", nil)
		return
	}
	path := strings.Trim(r.URL.Path, "/")
	switch path {
	case "healthz", "readyz", "livez":
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("ok"))
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		writeStatus(w, http.StatusMethodNotAllowed, "MethodNotAllowed",
			fmt.Sprintf("the server does not allow this method on the requested resource (%s): it serves a cache file, read-only", r.Method), nil)
		return
	}
	parts := strings.Split(path, "/")
	switch {
	case path == "version":
		h.version(w)
	case path == "api":
		h.apiVersions(w)
	case path == "apis":
		h.groupList(w)
	case parts[0] == "api" && len(parts) == 2 && parts[1] == "v1":
		h.resourceList(w, "", "v1")
	case parts[0] == "apis" && len(parts) == 2:
		h.group(w, parts[1])
	case parts[0] == "apis" && len(parts) == 3:
		h.resourceList(w, parts[1], parts[2])
	case parts[0] == "api" && len(parts) > 2 && parts[1] == "v1":
		h.objects(w, r, "", "v1", parts[2:])
	case parts[0] == "apis" && len(parts) > 3:
		h.objects(w, r, parts[1], parts[2], parts[3:])
	default:
		notFound(w)
	}
}

// authorized reports whether r carries the token.
func (h *Handler) authorized(r *http.Request) bool {
	token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return ok && subtle.ConstantTimeCompare([]byte(token), []byte(h.opts.Token)) == 1
}

// request is a request for objects of one resource.
type request struct {
	res       *Resource
	namespace string // "" for all namespaces or a cluster-scoped resource
	name      string // "" for a list
}

// objects answers a request under a group version: rest is the path
// after it ([namespaces NS] RESOURCE [NAME]).
func (h *Handler) objects(w http.ResponseWriter, r *http.Request, group, version string, rest []string) {
	var req request
	if len(rest) >= 3 && rest[0] == "namespaces" {
		req.namespace, rest = rest[1], rest[2:]
	}
	if len(rest) > 2 {
		// A subresource (status, log, exec...): not stored.
		notFound(w)
		return
	}
	res := h.byPath[schema.GroupVersionResource{Group: group, Version: version, Resource: rest[0]}]
	if res == nil && group == "" && rest[0] == "namespaces" && len(rest) == 2 && req.namespace == "" {
		h.namespace(w, rest[1])
		return
	}
	if res == nil {
		notFound(w)
		return
	}
	req.res = res
	if len(rest) == 2 {
		req.name = rest[1]
	}
	if !res.Namespaced && req.namespace != "" {
		notFound(w)
		return
	}
	if res.Forbidden != "" {
		writeStatus(w, http.StatusForbidden, "Forbidden", fmt.Sprintf("%s is forbidden: %s", groupResource(res), res.Forbidden),
			&details{Kind: res.GVR.Resource, Group: res.GVR.Group, Name: req.name})
		return
	}
	q := r.URL.Query()
	watch := q.Get("watch") == "true" || q.Get("watch") == "1"
	if !watch && req.name != "" {
		h.get(w, r, req)
		return
	}
	sel, err := parseSelection(q, req)
	if err != nil {
		writeError(w, err)
		return
	}
	if watch {
		h.watch(w, r, req, sel)
	} else {
		h.list(w, r, req, sel)
	}
}

// groupResource is resource[.group], as API errors name a resource.
func groupResource(res *Resource) string {
	return schema.GroupResource{Group: res.GVR.Group, Resource: res.GVR.Resource}.String()
}
