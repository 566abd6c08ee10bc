package factory

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/sharding"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

// lowerHalf is the shard of replica 0 of 2: the lower half of the uid
// hash space.
const lowerHalf = "shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')"

// uidsByHalf returns n uids whose FNV-1a hash is in the lower half of the
// hash space (lowerHalf) and n in the upper half.
func uidsByHalf(n int) (lower, upper []types.UID) {
	for i := 0; len(lower) < n || len(upper) < n; i++ {
		uid := types.UID(fmt.Sprintf("uid-%d", i))
		if sharding.HashField(string(uid)) < "8000000000000000" {
			if len(lower) < n {
				lower = append(lower, uid)
			}
		} else if len(upper) < n {
			upper = append(upper, uid)
		}
	}
	return lower, upper
}

func TestParseShard(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []sharding.ShardRangeRequirement
	}{
		{lowerHalf, []sharding.ShardRangeRequirement{{Key: "object.metadata.uid", Start: "0x0000000000000000", End: "0x8000000000000000"}}},
		{` shardRange( object.metadata.namespace , "0x0000000000000000","0x10000000000000000" ) ||shardRange(object.metadata.namespace, '0x0000000000000001', '0x0000000000000002')`,
			[]sharding.ShardRangeRequirement{
				{Key: "object.metadata.namespace", Start: "0x0000000000000000", End: "0x10000000000000000"},
				{Key: "object.metadata.namespace", Start: "0x0000000000000001", End: "0x0000000000000002"},
			}},
		{"", nil},
		{"shardRange(object.metadata.uid, '0x0', '0x8000000000000000')", nil},                // not 16 digits
		{"shardRange(object.metadata.uid, '0x8000000000000000', '0x0000000000000000')", nil}, // start after end
		{"shardRange(object.metadata.name, '0x0000000000000000', '0x8000000000000000')", nil},
		{"shardRange(object.metadata.uid, '0x0000000000000000', '0x1000000000000000a')", nil},
		{lowerHalf + " || shardRange(object.metadata.namespace, '0x0000000000000000', '0x8000000000000000')", nil}, // two fields
		{"(" + lowerHalf + ")", nil},
	} {
		got, ok := parseShard(tc.in)
		if ok != (tc.want != nil) || fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("parseShard(%q) = %v, %v; want %v", tc.in, got, ok, tc.want)
		}
	}
}

func TestSameShard(t *testing.T) {
	for _, tc := range []struct {
		sent, echoed string
		want         bool
	}{
		{lowerHalf, lowerHalf, true},
		{lowerHalf, `shardRange(object.metadata.uid,"0x0000000000000000",  "0x8000000000000000")`, true},
		{lowerHalf, "shardRange(object.metadata.uid, '0x8000000000000000', '0x10000000000000000')", false},
		{lowerHalf, lowerHalf + " || shardRange(object.metadata.uid, '0x9000000000000000', '0xa000000000000000')", false},
		{lowerHalf, "", false},
		{"(" + lowerHalf + ")", "( " + lowerHalf + " )", true}, // not parsed: compared as text but for spaces
		{"(" + lowerHalf + ")", lowerHalf, false},
	} {
		if got := sameShard(tc.sent, tc.echoed); got != tc.want {
			t.Errorf("sameShard(%q, %q) = %v, want %v", tc.sent, tc.echoed, got, tc.want)
		}
	}
}

// shardServer answers LISTs of configmaps as kube-apiserver does, in
// protobuf when asked and allowed, else JSON: the full objects, or
// PartialObjectMetadataList for a metadata client. echo, when not "", is
// the ListMeta.ShardInfo of its answers. It records the shard selector of
// each request.
type shardServer struct {
	items []corev1.ConfigMap
	echo  string
	proto bool
	// events are the events of every watch, sent in JSON, after which the
	// watch ends.
	events []shardServerEvent

	mu     sync.Mutex
	sent   []string
	protos int // answers sent in protobuf
}

func (s *shardServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.sent = append(s.sent, r.URL.Query().Get("shardSelector"))
	s.mu.Unlock()
	if r.URL.Query().Get("watch") == "true" {
		s.serveWatch(w, r)
		return
	}
	lm := metav1.ListMeta{ResourceVersion: "10"}
	if s.echo != "" {
		lm.ShardInfo = &metav1.ShardInfo{Selector: s.echo}
	}
	accept := r.Header.Get("Accept")
	var obj runtime.Object
	var sch *runtime.Scheme
	if strings.Contains(accept, "as=PartialObjectMetadataList") {
		l := &metav1.PartialObjectMetadataList{TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "PartialObjectMetadataList"}, ListMeta: lm}
		for _, cm := range s.items {
			l.Items = append(l.Items, metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "PartialObjectMetadata"}, ObjectMeta: cm.ObjectMeta})
		}
		obj, sch = l, metaScheme
	} else {
		l := &corev1.ConfigMapList{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMapList"}, ListMeta: lm}
		for _, cm := range s.items {
			cm.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}
			l.Items = append(l.Items, cm)
		}
		obj, sch = l, scheme.Scheme
	}
	var b bytes.Buffer
	if s.proto && strings.Contains(accept, "application/vnd.kubernetes.protobuf") {
		if err := protobuf.NewSerializer(sch, sch).Encode(obj, &b); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/vnd.kubernetes.protobuf")
		s.mu.Lock()
		s.protos++
		s.mu.Unlock()
	} else {
		if err := json.NewEncoder(&b).Encode(obj); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
	}
	_, _ = w.Write(b.Bytes())
}

// TestListWatchesCheckTheShard: each ListerWatcher the factory builds
// (typed in JSON and protobuf, dynamic, metadata-only in JSON and
// protobuf) sends the scope's shard and passes on a list answer only when
// it is that shard; otherwise its list fails with ErrShardIgnored and
// returns no object. Metadata-only lists, which kube-apiserver 1.36 sends
// without ShardInfo, are checked object by object.
func TestListWatchesCheckTheShard(t *testing.T) {
	lower, upper := uidsByHalf(2)
	cm := func(name string, uid types.UID) corev1.ConfigMap {
		return corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: uid, ResourceVersion: "5"}}
	}
	inShard := []corev1.ConfigMap{cm("a", lower[0]), cm("b", lower[1])}
	whole := append([]corev1.ConfigMap{cm("c", upper[0])}, append(inShard, cm("d", upper[1]))...)
	other := "shardRange(object.metadata.uid, '0x8000000000000000', '0x10000000000000000')"
	respaced := `shardRange(object.metadata.uid,"0x0000000000000000","0x8000000000000000")`

	type lwKind struct {
		name     string
		proto    bool
		metadata bool
		new      func(cfg *rest.Config, scope Scope) (cache.ListerWatcher, error)
	}
	typed := func(cfg *rest.Config, scope Scope) (cache.ListerWatcher, error) {
		return TypedListWatch(cfg, nil, configMapsGVR, scope)
	}
	typedProto := func(cfg *rest.Config, scope Scope) (cache.ListerWatcher, error) {
		cfg.ContentType = "application/vnd.kubernetes.protobuf"
		return TypedListWatch(cfg, nil, configMapsGVR, scope)
	}
	dyn := func(cfg *rest.Config, scope Scope) (cache.ListerWatcher, error) {
		c, err := dynamic.NewForConfig(cfg)
		if err != nil {
			return nil, err
		}
		return DynamicListWatch(c, configMapsGVR, scope), nil
	}
	meta := func(cfg *rest.Config, scope Scope) (cache.ListerWatcher, error) {
		c, err := metadata.NewForConfig(cfg)
		if err != nil {
			return nil, err
		}
		return MetadataListWatch(c, configMapsGVR, "ConfigMap", scope), nil
	}
	kinds := []lwKind{
		{"typed JSON", false, false, typed},
		{"typed protobuf", true, false, typedProto},
		{"dynamic", false, false, dyn},
		{"metadata JSON", false, true, meta},
		{"metadata protobuf", true, true, meta},
	}
	for _, k := range kinds {
		for _, tc := range []struct {
			name  string
			shard string
			echo  string
			items []corev1.ConfigMap
			// ok for full objects; metaOK for metadata-only lists.
			ok, metaOK bool
		}{
			{"unsharded scope, no ShardInfo", "", "", whole, true, true},
			{"ShardInfo of the shard", lowerHalf, lowerHalf, inShard, true, true},
			{"ShardInfo printed otherwise", lowerHalf, respaced, inShard, true, true},
			{"ShardInfo of another shard", lowerHalf, other, inShard, false, false},
			{"no ShardInfo, whole collection", lowerHalf, "", whole, false, false},
			{"no ShardInfo, only the shard's objects", lowerHalf, "", inShard, false, true},
			{"no ShardInfo, empty", lowerHalf, "", nil, false, true},
		} {
			t.Run(k.name+"/"+tc.name, func(t *testing.T) {
				s := &shardServer{items: tc.items, echo: tc.echo, proto: k.proto}
				srv := httptest.NewServer(s)
				defer srv.Close()
				lw, err := k.new(&rest.Config{Host: srv.URL}, Scope{Namespace: "ns", Shard: tc.shard})
				if err != nil {
					t.Fatal(err)
				}
				want := tc.ok
				if k.metadata {
					want = tc.metaOK
				}
				obj, err := cache.ToListerWatcherWithContext(lw).ListWithContext(context.Background(), metav1.ListOptions{Limit: 500})
				s.mu.Lock()
				sent, protos := s.sent, s.protos
				s.mu.Unlock()
				if k.proto != (protos == 1) {
					t.Errorf("%d answers in protobuf, want protobuf %v", protos, k.proto)
				}
				if len(sent) != 1 || sent[0] != tc.shard {
					t.Errorf("the server got shard selectors %q, want [%q]", sent, tc.shard)
				}
				if !want {
					if !errors.Is(err, ErrShardIgnored) {
						t.Fatalf("list: %v, want ErrShardIgnored", err)
					}
					if obj != nil {
						t.Fatalf("a failed list returned %T", obj)
					}
					if !strings.Contains(err.Error(), tc.shard) || !strings.Contains(err.Error(), "ShardedListAndWatch") {
						t.Errorf("the error %q does not name the selector sent and the feature gate", err)
					}
					return
				}
				if err != nil {
					t.Fatalf("list: %v", err)
				}
				if n := listLen(t, obj); n != len(tc.items) {
					t.Fatalf("list holds %d objects, want %d", n, len(tc.items))
				}
			})
		}
	}
}

// shardServerEvent is an event of a shardServer's watches.
type shardServerEvent struct {
	typ watch.EventType
	cm  corev1.ConfigMap
}

// serveWatch sends s.events in JSON, as PartialObjectMetadata to a
// metadata client, and ends the watch.
func (s *shardServer) serveWatch(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	for _, e := range s.events {
		var obj runtime.Object
		if strings.Contains(r.Header.Get("Accept"), "as=PartialObjectMetadata") {
			obj = &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "PartialObjectMetadata"}, ObjectMeta: e.cm.ObjectMeta}
		} else {
			cm := e.cm
			cm.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}
			obj = &cm
		}
		raw, err := json.Marshal(obj)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		if err := enc.Encode(metav1.WatchEvent{Type: string(e.typ), Object: runtime.RawExtension{Raw: raw}}); err != nil {
			return
		}
	}
}

func listLen(t *testing.T, obj runtime.Object) int {
	t.Helper()
	switch l := obj.(type) {
	case *corev1.ConfigMapList:
		return len(l.Items)
	case *unstructured.UnstructuredList:
		return len(l.Items)
	case *metav1.PartialObjectMetadataList:
		return len(l.Items)
	}
	t.Fatalf("list is a %T", obj)
	return 0
}

// A shard the factory could not check, or a ListerWatcher of this package
// built for another shard than the informer's scope, is refused when the
// informer is made, not found out by lists that never sync.
func TestInformerForRefusesShardsItCannotCheck(t *testing.T) {
	f := newFactory(t, filepath.Join(t.TempDir(), "cache.db"), "http://127.0.0.1:1")
	t.Cleanup(func() {
		if err := f.Shutdown(); err != nil {
			t.Error(err)
		}
	})
	ctx := context.Background()
	u := &unstructured.Unstructured{}
	parenthesised := "(" + lowerHalf + ")"
	typed := func(scope Scope) cache.ListerWatcher {
		lw, err := TypedListWatch(f.opts.RESTConfig, nil, configMapsGVR, scope)
		if err != nil {
			t.Fatal(err)
		}
		return lw
	}
	for _, tc := range []struct {
		name  string
		lw    cache.ListerWatcher
		scope Scope
	}{
		{"a selector the factory cannot parse", &cache.ListWatch{}, Scope{Shard: parenthesised}},
		{"built without the scope's shard", DynamicListWatch(f.opts.Dynamic, configMapsGVR, Scope{}), Scope{Shard: lowerHalf}},
		{"built for a shard, the scope has none", DynamicListWatch(f.opts.Dynamic, configMapsGVR, Scope{Shard: lowerHalf}), Scope{}},
		{"typed, built without the scope's shard", typed(Scope{}), Scope{Shard: lowerHalf}},
		{"typed, built for a shard, the scope has none", typed(Scope{Shard: lowerHalf}), Scope{}},
	} {
		if _, err := f.InformerFor(ctx, configMapsGVR, u, tc.lw, tc.scope, nil); !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("%s: InformerFor = %v; want an error wrapping ErrInvalidOptions", tc.name, err)
		}
	}
	if _, err := f.InformerFor(ctx, configMapsGVR, u, DynamicListWatch(f.opts.Dynamic, configMapsGVR, Scope{Shard: lowerHalf}), Scope{Shard: lowerHalf}, nil); err != nil {
		t.Errorf("InformerFor with a ListerWatcher of the scope's shard: %v", err)
	}
}
