package fakeapi

import (
	"bytes"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversionscheme "k8s.io/apimachinery/pkg/apis/meta/internalversion/scheme"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// codec is what the server encodes one response with.
type codec struct {
	info runtime.SerializerInfo
	// object encodes objects; unstructured objects bypass the scheme.
	object runtime.Encoder
}

// negotiate picks the first media type of the Accept header the server
// can produce for res, as kube-apiserver does: */* and application/* mean
// JSON, an empty header means JSON, media types with parameters other than
// the standard ones (as=Table, ...) are skipped. Protobuf is offered only
// for kinds the scheme knows. It returns a 406 error when nothing fits.
func (h *Handler) negotiate(r *http.Request, res Resource, stream bool) (codec, error) {
	accept := r.Header.Get("Accept")
	if strings.TrimSpace(accept) == "" {
		accept = runtime.ContentTypeJSON
	}
	typed := h.scheme.Recognizes(res.GroupVersionKind())
	for _, clause := range strings.Split(accept, ",") {
		mt, params, err := mime.ParseMediaType(strings.TrimSpace(clause))
		if err != nil || !standardParams(params) {
			continue
		}
		switch mt {
		case "*/*", "application/*":
			mt = runtime.ContentTypeJSON
		case runtime.ContentTypeProtobuf:
			if !typed {
				continue
			}
		}
		info, ok := runtime.SerializerInfoForMediaType(h.codecs.SupportedMediaTypes(), mt)
		if !ok || (stream && info.StreamSerializer == nil) {
			continue
		}
		c := codec{info: info, object: h.codecs.EncoderForVersion(info.Serializer, res.GroupVersion())}
		if !typed {
			c.object = unstructured.UnstructuredJSONScheme
		}
		return c, nil
	}
	return codec{}, apierrors.NewGenericServerResponse(http.StatusNotAcceptable, r.Method, res.GroupResource(), "",
		fmt.Sprintf("only the following media types are accepted: %s", strings.Join(h.mediaTypes(typed), ", ")), 0, false)
}

// standardParams reports whether a media type's parameters are ones every
// representation satisfies (q, charset, stream).
func standardParams(params map[string]string) bool {
	for k := range params {
		switch k {
		case "q", "charset", "stream":
		default:
			return false
		}
	}
	return params["q"] != "0"
}

func (h *Handler) mediaTypes(typed bool) []string {
	var out []string
	for _, info := range h.codecs.SupportedMediaTypes() {
		if info.MediaType == runtime.ContentTypeProtobuf && !typed {
			continue
		}
		out = append(out, info.MediaType)
	}
	return out
}

// listOptions decodes the query as kube-apiserver does.
func listOptions(q url.Values) (metav1.ListOptions, error) {
	var opts metav1.ListOptions
	if err := metainternalversionscheme.ParameterCodec.DecodeParameters(q, metav1.SchemeGroupVersion, &opts); err != nil {
		return opts, apierrors.NewBadRequest(err.Error())
	}
	return opts, nil
}

// serveCollection serves LIST and WATCH.
func (h *Handler) serveCollection(w http.ResponseWriter, r *http.Request, res Resource, ns string) {
	opts, err := listOptions(r.URL.Query())
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	ep := h.src.Endpoint(res.GroupVersionKind(), ns)
	c, err := h.negotiate(r, res, opts.Watch)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	if opts.Watch {
		wi, err := ep.WatchWithContext(r.Context(), opts)
		if err != nil {
			h.writeError(w, r, err)
			return
		}
		defer wi.Stop()
		h.serveWatch(w, r, res, c, wi)
		return
	}
	list, err := ep.ListWithContext(r.Context(), opts)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	h.writeObject(w, r, c, http.StatusOK, list)
}

// serveGet serves GET of one object.
func (h *Handler) serveGet(w http.ResponseWriter, r *http.Request, res Resource, ns, name string) {
	c, err := h.negotiate(r, res, false)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	obj, ok := h.src.Get(res.GroupVersionKind(), ns, name)
	if !ok {
		h.writeError(w, r, apierrors.NewNotFound(res.GroupResource(), name))
		return
	}
	h.writeObject(w, r, c, http.StatusOK, obj)
}

func (h *Handler) writeObject(w http.ResponseWriter, r *http.Request, c codec, code int, obj runtime.Object) {
	var buf bytes.Buffer
	if err := c.object.Encode(obj, &buf); err != nil {
		h.writeError(w, r, apierrors.NewInternalError(fmt.Errorf("encode %T: %w", obj, err)))
		return
	}
	w.Header().Set("Content-Type", c.info.MediaType)
	w.WriteHeader(code)
	_, _ = w.Write(buf.Bytes())
}

// serveWatch streams wi's events as kube-apiserver does (its
// WatchServer.HandleHTTP and watchEncoder): each object encoded by the
// negotiated serializer, wrapped in a metav1.WatchEvent encoded by the
// media type's stream serializer and framed. Events that are ready are
// written together and flushed when the watch has nothing more to send.
func (h *Handler) serveWatch(w http.ResponseWriter, r *http.Request, res Resource, c codec, wi watch.Interface) {
	flusher, ok := w.(http.Flusher)
	if !ok {
		h.writeError(w, r, apierrors.NewInternalError(errors.New("the response writer cannot flush")))
		return
	}
	mediaType := c.info.MediaType
	if mediaType != runtime.ContentTypeJSON {
		mediaType += ";stream=watch"
	}
	eventEncoder := h.codecs.EncoderForVersion(c.info.StreamSerializer.Serializer, res.GroupVersion())
	w.Header().Set("Content-Type", mediaType)
	w.Header().Set("Transfer-Encoding", "chunked")
	w.WriteHeader(http.StatusOK)
	flusher.Flush()
	frames := c.info.StreamSerializer.Framer.NewFrameWriter(w)
	var objBuf, eventBuf bytes.Buffer
	ch := wi.ResultChan()
	for {
		var ev watch.Event
		var open bool
		select {
		case ev, open = <-ch:
		default:
			// Nothing ready: send what was written, then wait.
			flusher.Flush()
			select {
			case ev, open = <-ch:
			case <-r.Context().Done():
				return
			}
		}
		if !open {
			flusher.Flush()
			return
		}
		objBuf.Reset()
		encoder := c.object
		if ev.Type == watch.Error {
			// Status objects are typed whatever the resource.
			encoder = h.codecs.EncoderForVersion(c.info.Serializer, metav1.Unversioned)
		}
		if err := encoder.Encode(ev.Object, &objBuf); err != nil {
			return
		}
		eventBuf.Reset()
		out := &metav1.WatchEvent{Type: string(ev.Type), Object: runtime.RawExtension{Raw: objBuf.Bytes()}}
		if err := eventEncoder.Encode(out, &eventBuf); err != nil {
			return
		}
		if _, err := frames.Write(eventBuf.Bytes()); err != nil {
			return
		}
	}
}

// writeError answers with err as a metav1.Status, in JSON unless the
// client accepts protobuf, with the status code of the API error. An error
// that is not an API error (an injected connection failure) aborts the
// connection.
func (h *Handler) writeError(w http.ResponseWriter, r *http.Request, err error) {
	var st apierrors.APIStatus
	if !errors.As(err, &st) {
		var ue *url.Error
		if errors.As(err, &ue) {
			panic(http.ErrAbortHandler)
		}
		st = apierrors.NewInternalError(err)
	}
	status := st.Status()
	status.Kind, status.APIVersion = "Status", "v1"
	if status.Details != nil && status.Details.RetryAfterSeconds > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int(status.Details.RetryAfterSeconds)))
	}
	code := int(status.Code)
	if code == 0 {
		code = http.StatusInternalServerError
	}
	info, _ := runtime.SerializerInfoForMediaType(h.codecs.SupportedMediaTypes(), runtime.ContentTypeJSON)
	if strings.Contains(r.Header.Get("Accept"), runtime.ContentTypeProtobuf) {
		if pb, ok := runtime.SerializerInfoForMediaType(h.codecs.SupportedMediaTypes(), runtime.ContentTypeProtobuf); ok {
			info = pb
		}
	}
	c := codec{info: info, object: h.codecs.EncoderForVersion(info.Serializer, metav1.Unversioned)}
	var buf bytes.Buffer
	if err := c.object.Encode(&status, &buf); err != nil {
		http.Error(w, status.Message, code)
		return
	}
	w.Header().Set("Content-Type", info.MediaType)
	w.WriteHeader(code)
	_, _ = w.Write(buf.Bytes())
}
