package genserver

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metainternalversionscheme "k8s.io/apimachinery/pkg/apis/meta/internalversion/scheme"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/scheme"
)

// ServeHTTP serves the API and, under /bench/, the control API.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.URL.Path, controlPrefix) {
		s.serveControl(w, r)
		return
	}
	if r.Method != http.MethodGet {
		writeStatus(w, r, apierrors.NewMethodNotSupported(schemaGR(r.URL.Path), r.Method))
		return
	}
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	var key string
	switch {
	case len(parts) == 3 && parts[0] == "api":
		key = "/" + parts[1] + "/" + parts[2]
	case len(parts) == 4 && parts[0] == "apis":
		key = parts[1] + "/" + parts[2] + "/" + parts[3]
	}
	res := s.byPath[key]
	if res == nil {
		writeStatus(w, r, apierrors.NewNotFound(schemaGR(r.URL.Path), ""))
		return
	}
	var opts metav1.ListOptions
	if err := metainternalversionscheme.ParameterCodec.DecodeParameters(r.URL.Query(), metav1.SchemeGroupVersion, &opts); err != nil {
		writeStatus(w, r, apierrors.NewBadRequest(err.Error()))
		return
	}
	c := s.negotiate(r, res)
	if opts.Watch {
		s.serveWatch(w, r, res, c, opts)
		return
	}
	s.serveList(w, r, res, c, opts)
}

func schemaGR(p string) schema.GroupResource { return schema.GroupResource{Resource: p} }

// codec encodes the objects of one response.
type codec struct {
	info   kruntime.SerializerInfo
	object kruntime.Encoder
	event  kruntime.Encoder
	status kruntime.Encoder
}

// negotiate picks protobuf when the client accepts it and the resource is
// typed, JSON otherwise.
func (s *Server) negotiate(r *http.Request, res *resource) codec {
	mt := kruntime.ContentTypeJSON
	if res.typed && strings.Contains(r.Header.Get("Accept"), kruntime.ContentTypeProtobuf) {
		mt = kruntime.ContentTypeProtobuf
	}
	info, _ := kruntime.SerializerInfoForMediaType(scheme.Codecs.SupportedMediaTypes(), mt)
	gv := res.GVR.GroupVersion()
	c := codec{
		info:   info,
		object: scheme.Codecs.EncoderForVersion(info.Serializer, gv),
		// metav1.WatchEvent is registered in v1 (and every group
		// version of the scheme); a custom resource's group is not.
		event:  scheme.Codecs.EncoderForVersion(info.StreamSerializer.Serializer, schema.GroupVersion{Version: "v1"}),
		status: scheme.Codecs.EncoderForVersion(info.Serializer, metav1.Unversioned),
	}
	if !res.typed {
		c.object = unstructured.UnstructuredJSONScheme
	}
	return c
}

// object returns object i of res in state (rv, gen).
func (res *resource) object(i int32, rv int64, gen uint32) (kruntime.Object, error) {
	obj := res.New(int(i))
	acc, err := meta.Accessor(obj)
	if err != nil {
		return nil, err
	}
	acc.SetResourceVersion(strconv.FormatInt(rv, 10))
	if gen != 0 {
		a := acc.GetAnnotations()
		if a == nil {
			a = map[string]string{}
		}
		a[GenerationAnnotation] = strconv.FormatUint(uint64(gen), 10)
		acc.SetAnnotations(a)
	}
	return obj, nil
}

// continueToken is "rv/offset", base64: the list's resourceVersion and the
// position in key order of the next object.
func continueToken(rv int64, off int) string {
	return base64.RawURLEncoding.EncodeToString([]byte(fmt.Sprintf("%d/%d", rv, off)))
}

func parseContinue(tok string) (int64, int, error) {
	b, err := base64.RawURLEncoding.DecodeString(tok)
	if err != nil {
		return 0, 0, err
	}
	var rv int64
	var off int
	if _, err := fmt.Sscanf(string(b), "%d/%d", &rv, &off); err != nil {
		return 0, 0, err
	}
	return rv, off, nil
}

// serveList serves a LIST page of the current state. Pages after the first
// are of the state when they are served, not of the first page's snapshot:
// benchmarks change objects only while no list is under way.
func (s *Server) serveList(w http.ResponseWriter, r *http.Request, res *resource, c codec, opts metav1.ListOptions) {
	off := 0
	s.mu.Lock()
	s.stats.Lists++
	if opts.Continue != "" {
		rv, o, err := parseContinue(opts.Continue)
		if err != nil || o < 0 || o > res.Count {
			s.mu.Unlock()
			writeStatus(w, r, apierrors.NewBadRequest("invalid continue token"))
			return
		}
		if rv < s.compacted {
			s.mu.Unlock()
			writeStatus(w, r, apierrors.NewResourceExpired("continue token expired"))
			return
		}
		off = o
	}
	end := res.Count
	if opts.Limit > 0 && off+int(opts.Limit) < end {
		end = off + int(opts.Limit)
	}
	listRV := s.rv
	page := make([]state, 0, end-off)
	for _, idx := range res.order[off:end] {
		page = append(page, state{idx, res.rv[idx], res.gen[idx]})
	}
	s.mu.Unlock()

	items := make([]kruntime.Object, 0, len(page))
	for _, st := range page {
		obj, err := res.object(st.idx, st.rv, st.gen)
		if err != nil {
			writeStatus(w, r, apierrors.NewInternalError(err))
			return
		}
		items = append(items, obj)
	}
	var list kruntime.Object
	if res.typed {
		l, err := scheme.Scheme.New(res.GVR.GroupVersion().WithKind(res.Kind + "List"))
		if err != nil {
			writeStatus(w, r, apierrors.NewInternalError(err))
			return
		}
		list = l
	} else {
		ul := &unstructured.UnstructuredList{}
		ul.SetAPIVersion(res.GVR.GroupVersion().String())
		ul.SetKind(res.Kind + "List")
		list = ul
	}
	if err := meta.SetList(list, items); err != nil {
		writeStatus(w, r, apierrors.NewInternalError(err))
		return
	}
	lm, err := meta.ListAccessor(list)
	if err != nil {
		writeStatus(w, r, apierrors.NewInternalError(err))
		return
	}
	lm.SetResourceVersion(strconv.FormatInt(listRV, 10))
	if end < res.Count {
		lm.SetContinue(continueToken(listRV, end))
	}
	var buf bytes.Buffer
	if err := c.object.Encode(list, &buf); err != nil {
		writeStatus(w, r, apierrors.NewInternalError(err))
		return
	}
	w.Header().Set("Content-Type", c.info.MediaType)
	_, _ = w.Write(buf.Bytes())
}

// watchBatch is the most changes a watch takes from the history at a
// time; encodeOrdered bounds the memory of those being encoded.
const watchBatch = 4096

// serveWatch serves a watch: WatchList initial events or a legacy watch's
// initial ADDED events first, then every change after the starting
// resourceVersion until the request ends, it times out or the server
// restarts.
func (s *Server) serveWatch(w http.ResponseWriter, r *http.Request, res *resource, c codec, opts metav1.ListOptions) {
	flusher, ok := w.(http.Flusher)
	if !ok {
		writeStatus(w, r, apierrors.NewInternalError(fmt.Errorf("the response writer cannot flush")))
		return
	}
	ctx := r.Context()
	var timeout, preTimeout <-chan time.Time
	if opts.TimeoutSeconds != nil && *opts.TimeoutSeconds > 0 {
		d := time.Duration(*opts.TimeoutSeconds) * time.Second
		t := time.NewTimer(d)
		defer t.Stop()
		timeout = t.C
		// kube-apiserver's watch cache sends a watch that allows
		// bookmarks one at its current resourceVersion 2s before the
		// watch's timeout (none when that moment has passed).
		if opts.AllowWatchBookmarks && d >= 3*time.Second {
			pt := time.NewTimer(d - 2*time.Second)
			defer pt.Stop()
			preTimeout = pt.C
		}
	}
	watchList := opts.SendInitialEvents != nil && *opts.SendInitialEvents
	ri := res.ri

	s.mu.Lock()
	s.stats.Watches++
	if watchList {
		s.stats.WatchLists++
	}
	s.stats.OpenWatches++
	restarted := s.restarted
	var cursor int64
	var snap *snapshot
	expired := false
	switch rv := opts.ResourceVersion; {
	case watchList || rv == "" || rv == "0":
		sn := s.snapshotLocked(res)
		snap, cursor = &sn, sn.rv
	default:
		n, err := strconv.ParseInt(rv, 10, 64)
		if err != nil {
			s.stats.OpenWatches--
			s.mu.Unlock()
			writeStatus(w, r, apierrors.NewBadRequest("invalid resourceVersion "+rv))
			return
		}
		cursor = n
		expired = n < s.compacted
	}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.stats.OpenWatches--
		s.mu.Unlock()
	}()

	mediaType := c.info.MediaType
	if mediaType != kruntime.ContentTypeJSON {
		mediaType += ";stream=watch"
	}
	w.Header().Set("Content-Type", mediaType)
	w.Header().Set("Transfer-Encoding", "chunked")
	w.WriteHeader(http.StatusOK)
	flusher.Flush()
	frames := c.info.StreamSerializer.Framer.NewFrameWriter(w)
	enc := newEventEncoder(c)

	if expired {
		st := apierrors.NewResourceExpired(fmt.Sprintf("too old resource version: %s (%d)", opts.ResourceVersion, s.Stats().ResourceVersion)).Status()
		st.Kind, st.APIVersion = "Status", "v1"
		if b, err := enc.encode(watch.Error, &st, c.status); err == nil {
			_, _ = frames.Write(b)
		}
		flusher.Flush()
		return
	}
	if snap != nil {
		if !s.waitOpen(ctx, restarted) {
			return
		}
		initial := func(k int) state {
			idx := res.order[k]
			return state{idx: idx, rv: snap.objRV[idx], gen: snap.gen[idx]}
		}
		if err := encodeOrdered(ctx, w, c, res, watch.Added, res.Count, initial); err != nil {
			return
		}
		if watchList {
			bm, err := bookmark(res, snap.rv, true)
			if err != nil {
				return
			}
			b, err := enc.encode(watch.Bookmark, bm, c.object)
			if err != nil {
				return
			}
			if _, err := frames.Write(b); err != nil {
				return
			}
		}
		snap = nil
	}
	// sendBookmark writes a bookmark at cursor: every change of the
	// resource up to it was sent.
	sendBookmark := func() bool {
		bm, err := bookmark(res, cursor, false)
		if err != nil {
			return false
		}
		b, err := enc.encode(watch.Bookmark, bm, c.object)
		if err != nil {
			return false
		}
		_, err = frames.Write(b)
		flusher.Flush()
		return err == nil
	}
	for {
		s.mu.Lock()
		changes, next := s.changesLocked(ri, cursor, watchBatch)
		notify := s.notify
		s.mu.Unlock()
		if len(changes) == 0 {
			cursor = next
			flusher.Flush()
			select {
			case <-notify:
				continue
			case <-preTimeout:
				preTimeout = nil
				if !sendBookmark() {
					return
				}
				continue
			case <-restarted:
				return
			case <-ctx.Done():
				return
			case <-timeout:
				return
			}
		}
		if !s.waitOpen(ctx, restarted) {
			return
		}
		changed := func(k int) state {
			ch := changes[k]
			return state{idx: ch.idx, rv: ch.rv, gen: ch.gen}
		}
		if err := encodeOrdered(ctx, w, c, res, watch.Modified, len(changes), changed); err != nil {
			return
		}
		cursor = next
	}
}

// waitOpen waits while watch streams are held back; false when the request
// ended or the server restarted meanwhile.
func (s *Server) waitOpen(ctx context.Context, restarted chan struct{}) bool {
	for {
		held := s.held.Closed()
		if held == nil {
			return true
		}
		select {
		case <-held:
		case <-restarted:
			return false
		case <-ctx.Done():
			return false
		}
	}
}

// bookmark returns a bookmark at rv: the WatchList's closing one (with
// the initial-events-end annotation) when end is set.
func bookmark(res *resource, rv int64, end bool) (kruntime.Object, error) {
	var obj kruntime.Object
	if res.typed {
		o, err := scheme.Scheme.New(res.GroupVersionKind())
		if err != nil {
			return nil, err
		}
		obj = o
	} else {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion(res.GVR.GroupVersion().String())
		u.SetKind(res.Kind)
		obj = u
	}
	acc, err := meta.Accessor(obj)
	if err != nil {
		return nil, err
	}
	acc.SetResourceVersion(strconv.FormatInt(rv, 10))
	if end {
		acc.SetAnnotations(map[string]string{metav1.InitialEventsAnnotationKey: "true"})
	}
	return obj, nil
}
