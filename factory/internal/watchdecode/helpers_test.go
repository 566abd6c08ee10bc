package watchdecode

import (
	"bytes"
	"io"
	"net/http"
	"sync/atomic"
	"testing"

	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	restwatch "k8s.io/client-go/rest/watch"

	"github.com/warmcache/warmcache/internal/podgen"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var podGV = corev1.SchemeGroupVersion

// typedSerializer is what client-go's generated clients use.
func typedSerializer() runtime.NegotiatedSerializer {
	return rest.CodecFactoryForGeneratedClient(scheme.Scheme, serializer.NewCodecFactory(scheme.Scheme)).WithoutConversion()
}

// dynamicSerializer is the dynamic client's.
func dynamicSerializer() runtime.NegotiatedSerializer {
	return dynamic.ConfigFor(&rest.Config{}).NegotiatedSerializer
}

// watchOver returns the watch that client-go's Request.Watch builds
// (rest/request.go, newStreamWatcher) over body, with ns's decoders.
func watchOver(t testing.TB, ns runtime.NegotiatedSerializer, mediaType string, body io.ReadCloser) watch.Interface {
	t.Helper()
	neg := runtime.NewClientNegotiator(ns, podGV)
	objectDecoder, streamingSerializer, framer, err := neg.StreamDecoder(mediaType, nil)
	if err != nil {
		t.Fatalf("StreamDecoder(%s): %v", mediaType, err)
	}
	frameReader := framer.NewFrameReader(body)
	return watch.NewStreamWatcher(
		restwatch.NewDecoder(streaming.NewDecoder(frameReader, streamingSerializer), objectDecoder),
		apierrors.NewClientErrorReporter(http.StatusInternalServerError, "GET", "ClientWatchDecoding"),
	)
}

// encoder writes watch events as a server does.
type encoder struct {
	buf *bytes.Buffer
	enc *restwatch.Encoder
}

func newEncoder(t testing.TB, mediaType string) *encoder {
	t.Helper()
	codecs := serializer.NewCodecFactory(scheme.Scheme)
	info, ok := runtime.SerializerInfoForMediaType(codecs.SupportedMediaTypes(), mediaType)
	if !ok || info.StreamSerializer == nil {
		t.Fatalf("no stream serializer for %s", mediaType)
	}
	buf := &bytes.Buffer{}
	fw := info.StreamSerializer.Framer.NewFrameWriter(buf)
	return &encoder{buf: buf, enc: restwatch.NewEncoder(streaming.NewEncoder(fw, info.StreamSerializer.Serializer), codecs.EncoderForVersion(info.Serializer, podGV))}
}

func (e *encoder) event(t testing.TB, typ watch.EventType, obj runtime.Object) {
	t.Helper()
	if err := e.enc.Encode(&watch.Event{Type: typ, Object: obj}); err != nil {
		t.Fatalf("encode %s: %v", typ, err)
	}
}

// raw appends b to the stream as it is.
func (e *encoder) raw(b []byte) { e.buf.Write(b) }

// podEvents writes n events of podgen's pods, one in 50 a bookmark, one
// in 7 a modification, one in 11 a deletion.
func (e *encoder) podEvents(t testing.TB, from, n int) {
	t.Helper()
	for i := from; i < from+n; i++ {
		p := podgen.Pod(i)
		switch {
		case i%50 == 49:
			e.event(t, watch.Bookmark, &corev1.Pod{TypeMeta: metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"}, ObjectMeta: metav1.ObjectMeta{ResourceVersion: p.ResourceVersion}})
		case i%11 == 10:
			e.event(t, watch.Deleted, p)
		case i%7 == 6:
			e.event(t, watch.Modified, p)
		default:
			e.event(t, watch.Added, p)
		}
	}
}

// body is a response body over fixed bytes that records its Close.
type body struct {
	r      io.Reader
	closed atomic.Bool
}

func newBody(b []byte) *body { return &body{r: bytes.NewReader(b)} }

func (b *body) Read(p []byte) (int, error) {
	if b.closed.Load() {
		return 0, io.ErrClosedPipe
	}
	return b.r.Read(p)
}

func (b *body) Close() error { b.closed.Store(true); return nil }

// drain receives every event until the watch closes.
func drain(w watch.Interface) []watch.Event {
	var out []watch.Event
	for e := range w.ResultChan() {
		out = append(out, e)
	}
	return out
}
