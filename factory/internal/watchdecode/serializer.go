// Package watchdecode decodes the frames of a REST client's watch streams
// on every core, and hands the events to client-go's own watcher in the
// order they arrived.
//
// client-go decodes a watch response on one goroutine: Request.Watch asks
// the client's Negotiator for a StreamDecoder (the object decoder, the
// event envelope's serializer and a Framer), wraps the response body in
// the Framer's frame reader, and a watch.StreamWatcher loops on
// rest/watch.Decoder: read a frame, decode the metav1.WatchEvent, decode
// the embedded object, send the event. Wrap returns a NegotiatedSerializer
// that keeps all of that and moves only the decoding: its frame reader
// reads the frames in order on one goroutine, decodes each (envelope and
// object) on up to GOMAXPROCS workers, and hands the StreamWatcher one
// token per frame, for which the envelope serializer and the object
// decoder of the same StreamDecoder answer with what the workers decoded.
//
// The hook is the NegotiatedSerializer because it is the only one client-go
// exposes per request inside Request.Watch: the HTTP request, its retries,
// the status of a failed request and WatchList's sendInitialEvents stay
// client-go's, and so does the StreamWatcher (event types, Error events,
// the quiet close on EOF, unexpected EOF, probable EOF and timeouts, Stop
// from any goroutine). The alternatives copy more of client-go: a Watch
// wrapper over Request.Stream would redo Watch's retries and its handling
// of failed responses, and an http.RoundTripper sees bytes, not decoders. What it relies on is that runtime's ClientNegotiator
// takes the three values of a StreamDecoder from one SupportedMediaTypes
// answer (SupportedMediaTypes returns fresh values on each call, which is
// what links them), and that client-go's streaming decoder reads one frame
// per Read unless told io.ErrShortBuffer. A client that used the values
// otherwise would fall back to the inner ones: the envelope serializer and
// the object decoder answer from the workers only once the frame reader
// has been created for them.
//
// Memory stays bounded: frames travel in chunks (at most chunkFrames
// frames or chunkBytes bytes, whatever is buffered when the reader would
// wait for the network). A consumer that falls behind finds the backlog
// read ahead as raw chunks, up to a Budget of bytes shared by the
// process's streams plus a floor per stream (see readahead.go); at most
// 2*GOMAXPROCS chunks beyond them are decoded ahead of the consumer, and a
// consumer that does not receive stops the reader once the budget is
// spent. With one P the frame reader is client-go's own, and decoding
// stays inline.
package watchdecode

import (
	"io"
	"runtime"

	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Wrap returns ns with its watch streams decoded on every core. ns's
// decoders (DecoderToVersion) decode the objects, on the workers.
func Wrap(ns k8sruntime.NegotiatedSerializer) k8sruntime.NegotiatedSerializer {
	return negotiated{inner: ns}
}

// WrapBudget is Wrap whose streams read ahead within b, shared with the
// other streams on it; nil b is the process's default budget.
func WrapBudget(ns k8sruntime.NegotiatedSerializer, b *Budget) k8sruntime.NegotiatedSerializer {
	return negotiated{inner: ns, budget: b}
}

// negotiated is Wrap's NegotiatedSerializer.
type negotiated struct {
	inner k8sruntime.NegotiatedSerializer
	// procs, when not zero, replaces GOMAXPROCS (tests).
	procs int
	// budget bounds the streams' read-ahead; nil: the process's default.
	budget *Budget
}

// SupportedMediaTypes returns inner's, each with a fresh link between its
// serializer, its stream serializer and its framer.
func (n negotiated) SupportedMediaTypes() []k8sruntime.SerializerInfo {
	infos := n.inner.SupportedMediaTypes()
	out := make([]k8sruntime.SerializerInfo, len(infos))
	for i, info := range infos {
		out[i] = info
		if info.StreamSerializer == nil || info.Serializer == nil {
			continue
		}
		l := &link{serializer: info.Serializer, envelope: info.StreamSerializer.Serializer, framer: info.StreamSerializer.Framer, procs: n.procs, budget: n.budget}
		ss := *info.StreamSerializer
		ss.Serializer = envelopeSerializer{l}
		ss.Framer = framer{l}
		out[i].Serializer = linkedSerializer{l}
		out[i].StreamSerializer = &ss
	}
	return out
}

func (n negotiated) EncoderForVersion(e k8sruntime.Encoder, gv k8sruntime.GroupVersioner) k8sruntime.Encoder {
	if s, ok := e.(linkedSerializer); ok {
		e = s.serializer
	}
	return n.inner.EncoderForVersion(e, gv)
}

func (n negotiated) DecoderToVersion(d k8sruntime.Decoder, gv k8sruntime.GroupVersioner) k8sruntime.Decoder {
	s, ok := d.(linkedSerializer)
	if !ok {
		return n.inner.DecoderToVersion(d, gv)
	}
	dec := n.inner.DecoderToVersion(s.serializer, gv)
	if s.decoder == nil {
		s.decoder = dec
	}
	return objectDecoder{link: s.link, Decoder: dec}
}

// link ties together the values of one SerializerInfo that
// SupportedMediaTypes returned. Its fields are set in the order
// Request.Watch asks for them (DecoderToVersion, then NewFrameReader), on
// the goroutine that calls Watch, before the StreamWatcher starts.
type link struct {
	serializer k8sruntime.Serializer // inner's
	envelope   k8sruntime.Serializer // inner's stream serializer
	framer     k8sruntime.Framer     // inner's
	procs      int
	budget     *Budget

	decoder k8sruntime.Decoder // the first DecoderToVersion's answer
	stream  *stream            // the frame reader, once created
}

func (l *link) readahead() *Budget {
	if l.budget != nil {
		return l.budget
	}
	return defaultBudget
}

func (l *link) workers() int {
	if l.procs > 0 {
		return l.procs
	}
	return runtime.GOMAXPROCS(0)
}

// linkedSerializer stands for inner's serializer in a SerializerInfo, so
// that DecoderToVersion knows the link.
type linkedSerializer struct{ *link }

func (s linkedSerializer) Encode(obj k8sruntime.Object, w io.Writer) error {
	return s.serializer.Encode(obj, w)
}

func (s linkedSerializer) Identifier() k8sruntime.Identifier { return s.serializer.Identifier() }

func (s linkedSerializer) Decode(data []byte, defaults *schema.GroupVersionKind, into k8sruntime.Object) (k8sruntime.Object, *schema.GroupVersionKind, error) {
	return s.serializer.Decode(data, defaults, into)
}

// objectDecoder is the object decoder of a link: the object the workers
// decoded for the current frame once the link has a stream, else inner's.
type objectDecoder struct {
	*link
	k8sruntime.Decoder
}

func (d objectDecoder) Decode(data []byte, defaults *schema.GroupVersionKind, into k8sruntime.Object) (k8sruntime.Object, *schema.GroupVersionKind, error) {
	if s := d.stream; s != nil {
		return s.object()
	}
	return d.Decoder.Decode(data, defaults, into)
}

// envelopeSerializer is the event envelope's serializer of a link: the
// envelope the workers decoded for the current frame once the link has a
// stream, else inner's.
type envelopeSerializer struct{ *link }

func (s envelopeSerializer) Encode(obj k8sruntime.Object, w io.Writer) error {
	return s.envelope.Encode(obj, w)
}

func (s envelopeSerializer) Identifier() k8sruntime.Identifier { return s.envelope.Identifier() }

func (s envelopeSerializer) Decode(data []byte, defaults *schema.GroupVersionKind, into k8sruntime.Object) (k8sruntime.Object, *schema.GroupVersionKind, error) {
	if st := s.stream; st != nil {
		return st.event(into)
	}
	return s.envelope.Decode(data, defaults, into)
}

// framer is the Framer of a link: its frame reader decodes on every core
// when there is more than one P and DecoderToVersion gave the link its
// object decoder; else it is inner's.
type framer struct{ *link }

func (f framer) NewFrameReader(r io.ReadCloser) io.ReadCloser {
	procs := f.workers()
	if f.decoder == nil || f.stream != nil || procs < 2 {
		return f.framer.NewFrameReader(r)
	}
	f.stream = newStream(f.framer, r, f.envelope, f.decoder, procs, f.readahead())
	return f.stream
}

func (f framer) NewFrameWriter(w io.Writer) io.Writer { return f.framer.NewFrameWriter(w) }
