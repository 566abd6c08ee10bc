package fakeapi

import (
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/warmcache/warmcache/internal/fakesource"
)

// ErrInvalidOptions is returned by NewHandler and Start for bad options.
var ErrInvalidOptions = errors.New("fakeapi: invalid options")

// Resource is one API resource the server serves.
type Resource struct {
	// GroupVersionResource names the resource, for example
	// {Version: "v1", Resource: "pods"}. Version and Resource are
	// required.
	schema.GroupVersionResource
	// Kind is the kind of its objects, for example "Pod". Required.
	Kind string
	// Namespaced says whether objects live in namespaces.
	Namespaced bool
}

// GroupVersionKind returns the kind of the resource's objects.
func (r Resource) GroupVersionKind() schema.GroupVersionKind {
	return r.GroupVersion().WithKind(r.Kind)
}

// Pods is the pods resource, served by default.
var Pods = Resource{GroupVersionResource: corev1.SchemeGroupVersion.WithResource("pods"), Kind: "Pod", Namespaced: true}

// DefaultVersion is the version /version reports by default.
var DefaultVersion = version.Info{
	Major: "1", Minor: "36", GitVersion: "v1.36.3-fakeapi",
	GoVersion: "go1.26", Compiler: "gc", Platform: "linux/amd64",
}

// Options configures NewHandler and Start.
type Options struct {
	// Source holds the objects served. Required.
	Source *fakesource.Source
	// Resources are the resources served. Default: Pods.
	Resources []Resource
	// Scheme encodes typed objects; it must be the scheme the Source
	// uses. Default: client-go's kubernetes scheme.
	Scheme *runtime.Scheme
	// Version is what /version reports. Default: DefaultVersion.
	Version *version.Info
}

func (o Options) withDefaults() (Options, error) {
	if o.Source == nil {
		return o, fmt.Errorf("%w: Source is required", ErrInvalidOptions)
	}
	if len(o.Resources) == 0 {
		o.Resources = []Resource{Pods}
	}
	seen := map[schema.GroupVersionResource]bool{}
	for _, r := range o.Resources {
		if r.Version == "" || r.Resource == "" || r.Kind == "" {
			return o, fmt.Errorf("%w: resource %+v needs Version, Resource and Kind", ErrInvalidOptions, r)
		}
		if seen[r.GroupVersionResource] {
			return o, fmt.Errorf("%w: resource %v listed twice", ErrInvalidOptions, r.GroupVersionResource)
		}
		seen[r.GroupVersionResource] = true
	}
	if o.Scheme == nil {
		o.Scheme = scheme.Scheme
	}
	if o.Version == nil {
		v := DefaultVersion
		o.Version = &v
	}
	return o, nil
}
