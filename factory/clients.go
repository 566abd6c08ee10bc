package factory

import (
	"context"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"

	"github.com/warmcache/warmcache/factory/internal/watchdecode"
)

// dynamicClientFor returns client-go's dynamic client for config whose
// watches are decoded on every core (factory/internal/watchdecode). It
// builds the client as dynamic.NewForConfigAndClient does, which would
// set the serializer again.
func dynamicClientFor(config *rest.Config, readAhead *watchdecode.Budget) (*dynamic.DynamicClient, error) {
	c := dynamic.ConfigFor(config)
	c.NegotiatedSerializer = watchdecode.WrapBudget(c.NegotiatedSerializer, readAhead)
	c.GroupVersion = nil
	c.APIPath = "/if-you-see-this-search-for-the-break"
	rc, err := rest.UnversionedRESTClientFor(c)
	if err != nil {
		return nil, err
	}
	return dynamic.New(rc), nil
}

// metadataClientFor returns client-go's metadata client for config whose
// watches are decoded on every core. client-go builds a metadata client
// only with its own serializer, so Watch alone is metadataResource's, the
// same request as client-go's metadata client sends (metadata.go in
// k8s.io/client-go/metadata) through a REST client of that serializer
// wrapped; everything else is client-go's client.
func metadataClientFor(config *rest.Config, readAhead *watchdecode.Budget) (metadata.Interface, error) {
	mc, err := metadata.NewForConfig(config)
	if err != nil {
		return nil, err
	}
	c := metadata.ConfigFor(config)
	c.NegotiatedSerializer = watchdecode.WrapBudget(c.NegotiatedSerializer, readAhead)
	c.GroupVersion = &schema.GroupVersion{}
	c.APIPath = "/this-value-should-never-be-sent"
	rc, err := rest.RESTClientFor(c)
	if err != nil {
		return nil, err
	}
	return metadataClient{Interface: mc, rest: rc}, nil
}

// metadataAccept is the Accept header of client-go's metadata watches.
const metadataAccept = "application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json"

// metadataParams encodes ListOptions as client-go's metadata client does.
var metadataParams = func() runtime.ParameterCodec {
	s := runtime.NewScheme()
	metav1.AddToGroupVersion(s, schema.GroupVersion{Version: "v1"})
	return runtime.NewParameterCodec(s)
}()

// metadataClient is client-go's metadata client with metadataResource's
// Watch.
type metadataClient struct {
	metadata.Interface
	rest *rest.RESTClient
}

func (c metadataClient) Resource(gvr schema.GroupVersionResource) metadata.Getter {
	g := c.Interface.Resource(gvr)
	return metadataGetter{getter: g, metadataResource: metadataResource{ResourceInterface: g, rest: c.rest, gvr: gvr}}
}

type metadataGetter struct {
	metadataResource
	getter metadata.Getter
}

func (g metadataGetter) Namespace(ns string) metadata.ResourceInterface {
	return metadataResource{ResourceInterface: g.getter.Namespace(ns), rest: g.rest, gvr: g.gvr, namespace: ns}
}

// metadataResource is client-go's metadata client of one resource (in
// one namespace) but for Watch.
type metadataResource struct {
	metadata.ResourceInterface
	rest      *rest.RESTClient
	gvr       schema.GroupVersionResource
	namespace string
}

// Watch sends client-go's metadata watch request.
func (r metadataResource) Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	var timeout time.Duration
	if opts.TimeoutSeconds != nil {
		timeout = time.Duration(*opts.TimeoutSeconds) * time.Second
	}
	opts.Watch = true
	return r.rest.Get().
		AbsPath(r.segments()...).
		SetHeader("Accept", metadataAccept).
		SpecificallyVersionedParams(&opts, metadataParams, schema.GroupVersion{Version: "v1"}).
		Timeout(timeout).
		Watch(ctx)
}

// segments is the collection's path, as client-go's metadata client
// makes it.
func (r metadataResource) segments() []string {
	url := []string{"api"}
	if r.gvr.Group != "" {
		url = []string{"apis", r.gvr.Group}
	}
	url = append(url, r.gvr.Version)
	if r.namespace != "" {
		url = append(url, "namespaces", r.namespace)
	}
	return append(url, r.gvr.Resource)
}
