package factory

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	restwatch "k8s.io/client-go/rest/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/warmcache/warmcache/factory/internal/watchdecode"
	"github.com/warmcache/warmcache/internal/podgen"
	"github.com/warmcache/warmcache/store/wire"
)

// watchServer answers every request with a watch stream of n podgen pods
// (one in 50 a bookmark), as kube-apiserver encodes it for the request's
// Accept header (metadata-only, protobuf or JSON), and records the
// requests.
type watchServer struct {
	n int

	mu       sync.Mutex
	requests []string // method, URL and Accept header
}

func (s *watchServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	accept := r.Header.Get("Accept")
	s.mu.Lock()
	s.requests = append(s.requests, r.Method+" "+r.URL.String()+" "+accept)
	s.mu.Unlock()
	codecs := serializer.NewCodecFactory(scheme.Scheme)
	mediaType := k8sruntime.ContentTypeJSON
	if strings.HasPrefix(accept, k8sruntime.ContentTypeProtobuf) {
		mediaType = k8sruntime.ContentTypeProtobuf
	}
	info, _ := k8sruntime.SerializerInfoForMediaType(codecs.SupportedMediaTypes(), mediaType)
	var embedded k8sruntime.Encoder = codecs.EncoderForVersion(info.Serializer, corev1.SchemeGroupVersion)
	metadataOnly := strings.Contains(accept, "as=PartialObjectMetadata")
	if metadataOnly && mediaType == k8sruntime.ContentTypeProtobuf {
		embedded = protobuf.NewSerializer(metaScheme, metaScheme)
	} else if metadataOnly {
		embedded = serializer.NewCodecFactory(metaScheme).LegacyCodec(metav1.SchemeGroupVersion)
	}
	var b bytes.Buffer
	enc := restwatch.NewEncoder(streaming.NewEncoder(info.StreamSerializer.Framer.NewFrameWriter(&b), info.StreamSerializer.Serializer), embedded)
	for i := range s.n {
		var obj k8sruntime.Object = podgen.Pod(i)
		typ := watch.Added
		if i%50 == 49 {
			typ = watch.Bookmark
			obj = &corev1.Pod{TypeMeta: metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"}, ObjectMeta: metav1.ObjectMeta{ResourceVersion: fmt.Sprint(i + 1)}}
		}
		if metadataOnly {
			p := obj.(*corev1.Pod)
			obj = &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{Kind: "PartialObjectMetadata", APIVersion: "meta.k8s.io/v1"}, ObjectMeta: p.ObjectMeta}
		}
		if err := enc.Encode(&watch.Event{Type: typ, Object: obj}); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
	}
	w.Header().Set("Content-Type", mediaType)
	_, _ = w.Write(b.Bytes())
}

// TestClientsDecodeWatchesOnEveryCore: the watches of every client the
// factory builds (typed in protobuf and JSON, dynamic, metadata-only)
// read their streams on the parallel path when there is more than one P,
// deliver every event in order, and the typed protobuf ones remember each
// object's message (store/wire). The metadata-only watch sends client-go's
// request.
func TestClientsDecodeWatchesOnEveryCore(t *testing.T) {
	const n = 1500
	for _, tc := range []struct {
		name   string
		new    func(t *testing.T, cfg *rest.Config) cache.ListerWatcher
		proto  bool
		object func(k8sruntime.Object) (metav1.Object, bool)
	}{
		{"typed protobuf", func(t *testing.T, cfg *rest.Config) cache.ListerWatcher {
			cfg.ContentType = k8sruntime.ContentTypeProtobuf
			lw, err := TypedListWatch(cfg, nil, podsGVR, Scope{})
			if err != nil {
				t.Fatal(err)
			}
			return lw
		}, true, nil},
		{"typed JSON", func(t *testing.T, cfg *rest.Config) cache.ListerWatcher {
			lw, err := TypedListWatch(cfg, nil, podsGVR, Scope{})
			if err != nil {
				t.Fatal(err)
			}
			return lw
		}, false, nil},
		{"dynamic", func(t *testing.T, cfg *rest.Config) cache.ListerWatcher {
			c, err := dynamicClientFor(cfg, nil)
			if err != nil {
				t.Fatal(err)
			}
			return DynamicListWatch(c, podsGVR, Scope{})
		}, false, nil},
		{"metadata", func(t *testing.T, cfg *rest.Config) cache.ListerWatcher {
			c, err := metadataClientFor(cfg, nil)
			if err != nil {
				t.Fatal(err)
			}
			return MetadataListWatch(c, podsGVR, "Pod", Scope{Namespace: "ns-001"})
		}, false, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := &watchServer{n: n}
			hs := httptest.NewServer(srv)
			defer hs.Close()
			lw := cache.ToListerWatcherWithContext(tc.new(t, &rest.Config{Host: hs.URL}))
			ctx := context.Background()
			before := watchdecode.StreamsOpened()
			w, err := lw.WatchWithContext(ctx, metav1.ListOptions{ResourceVersion: "1", AllowWatchBookmarks: true})
			if err != nil {
				t.Fatal(err)
			}
			if readers := watchdecode.StreamsOpened() - before; runtime.GOMAXPROCS(0) > 1 && readers != 1 {
				t.Errorf("%d parallel stream readers for the watch; want 1", readers)
			} else if runtime.GOMAXPROCS(0) == 1 && readers != 0 {
				t.Errorf("%d parallel stream readers with one P; want 0", readers)
			}
			events := drain(t, w)
			w.Stop()
			if len(events) != n {
				t.Fatalf("%d events, want %d", len(events), n)
			}
			for i, e := range events {
				want := watch.Added
				if i%50 == 49 {
					want = watch.Bookmark
				}
				m, ok := e.Object.(metav1.Object)
				if e.Type != want || !ok || m.GetResourceVersion() != fmt.Sprint(i+1) {
					t.Fatalf("event %d: %s %T, want %s at resourceVersion %d", i, e.Type, e.Object, want, i+1)
				}
				msg, remembered := wire.Take(e.Object)
				if want == watch.Bookmark {
					continue // an object of the kind, remembered or not as client-go's decoder would
				}
				if !tc.proto {
					if remembered {
						t.Fatalf("event %d: a message remembered for %T", i, e.Object)
					}
					continue
				}
				wantMsg, err := podgen.Pod(i).Marshal()
				if err != nil {
					t.Fatal(err)
				}
				if !remembered || !bytes.Equal(msg, wantMsg) {
					t.Fatalf("event %d: remembered %d bytes (%v); want the pod's message, %d bytes", i, len(msg), remembered, len(wantMsg))
				}
			}
		})
	}
}

// TestMetadataWatchSendsClientGosRequest compares the watch request of the
// factory's metadata client with client-go's metadata client's.
func TestMetadataWatchSendsClientGosRequest(t *testing.T) {
	srv := &watchServer{n: 3}
	hs := httptest.NewServer(srv)
	defer hs.Close()
	cfg := &rest.Config{Host: hs.URL}
	ours, err := metadataClientFor(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	theirs, err := metadata.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	timeout := int64(30)
	opts := metav1.ListOptions{ResourceVersion: "7", AllowWatchBookmarks: true, LabelSelector: "a=b", TimeoutSeconds: &timeout}
	for _, gvr := range []schema.GroupVersionResource{podsGVR, {Group: "apps", Version: "v1", Resource: "deployments"}} {
		for _, ns := range []string{"", "ns"} {
			srv.requests = nil
			for _, c := range []metadata.Interface{ours, theirs} {
				var ri metadata.ResourceInterface = c.Resource(gvr)
				if ns != "" {
					ri = c.Resource(gvr).Namespace(ns)
				}
				w, err := ri.Watch(context.Background(), opts)
				if err != nil {
					t.Fatal(err)
				}
				drain(t, w)
				w.Stop()
			}
			if len(srv.requests) != 2 || srv.requests[0] != srv.requests[1] {
				t.Errorf("%s in %q: requests %q, want two the same", gvr, ns, srv.requests)
			}
		}
	}
}
