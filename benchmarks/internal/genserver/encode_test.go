package genserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strconv"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/warmcache/warmcache/benchmarks/internal/measure"
	"github.com/warmcache/warmcache/internal/podgen"
)

// readEvents reads n events of the watch at url+query in mediaType and
// returns each one's bytes, framing removed.
func readEvents(t *testing.T, ctx context.Context, url, query, mediaType string, n int) [][]byte {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url+query, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", mediaType)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	out := make([][]byte, 0, n)
	for len(out) < n {
		var ev []byte
		if mediaType == kruntime.ContentTypeJSON {
			ev, err = br.ReadBytes('\n')
		} else {
			var hdr [4]byte
			if _, err = io.ReadFull(br, hdr[:]); err == nil {
				ev = make([]byte, binary.BigEndian.Uint32(hdr[:]))
				_, err = io.ReadFull(br, ev)
			}
		}
		if err != nil {
			t.Fatalf("%s: after %d events: %v", query, len(out), err)
		}
		out = append(out, ev)
	}
	return out
}

// canonicalEvent returns what kube-apiserver's watch encoder writes for
// pod i at (rv, gen), framing removed: the pod encoded by the scheme's
// encoder for v1, wrapped in a metav1.WatchEvent encoded by the media
// type's stream serializer.
func canonicalEvent(t *testing.T, mediaType string, typ watch.EventType, i int, rv int64, gen uint32) []byte {
	t.Helper()
	pod := podgen.Pod(i)
	pod.ResourceVersion = strconv.FormatInt(rv, 10)
	if gen != 0 {
		pod.Annotations[GenerationAnnotation] = strconv.FormatUint(uint64(gen), 10)
	}
	info, ok := kruntime.SerializerInfoForMediaType(scheme.Codecs.SupportedMediaTypes(), mediaType)
	if !ok {
		t.Fatalf("no serializer for %s", mediaType)
	}
	obj, err := kruntime.Encode(scheme.Codecs.EncoderForVersion(info.Serializer, corev1.SchemeGroupVersion), pod)
	if err != nil {
		t.Fatal(err)
	}
	ev, err := kruntime.Encode(scheme.Codecs.EncoderForVersion(info.StreamSerializer.Serializer, corev1.SchemeGroupVersion),
		&metav1.WatchEvent{Type: string(typ), Object: kruntime.RawExtension{Raw: obj}})
	if err != nil {
		t.Fatal(err)
	}
	return ev
}

// TestServedBytesAreCanonical checks that every initial event and every
// change is, byte for byte, what the scheme's encoders make of the same
// pod, in both encodings, across chunks and history batches.
func TestServedBytesAreCanonical(t *testing.T) {
	const pods, changes = 300, watchBatch + 2*encodeChunk + 5
	for _, mt := range []string{kruntime.ContentTypeProtobuf, kruntime.ContentTypeJSON} {
		t.Run(mt, func(t *testing.T) {
			s, err := New(Pods(pods))
			if err != nil {
				t.Fatal(err)
			}
			hs := httptest.NewServer(s)
			defer hs.Close()
			defer hs.CloseClientConnections()
			ctx := context.Background()

			// Changes before the WatchList: its initial events carry
			// generations.
			before, err := s.Churn("pods", 7, 3, 0)
			if err != nil {
				t.Fatal(err)
			}
			s.Open()
			got := readEvents(t, ctx, hs.URL, "/api/v1/pods?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan", mt, pods)
			keys := make([]int, pods)
			for i := range keys {
				keys[i] = i
			}
			sort.Slice(keys, func(a, b int) bool {
				na, ma := podgen.Key(keys[a])
				nb, mb := podgen.Key(keys[b])
				return na < nb || na == nb && ma < mb
			})
			changed := map[int]int64{}
			stride := measure.SpreadStride(pods)
			for k := range 7 {
				changed[k*stride%pods] = before.FirstRV + int64(k)
			}
			for k, i := range keys {
				rv, gen := int64(2+i), uint32(0)
				if r, ok := changed[i]; ok {
					rv, gen = r, 3
				}
				if want := canonicalEvent(t, mt, watch.Added, i, rv, gen); !bytes.Equal(got[k], want) {
					t.Fatalf("initial event %d (pod %d): %d bytes, want %d canonical bytes", k, i, len(got[k]), len(want))
				}
			}

			res, err := s.Churn("pods", changes, 4, 0)
			if err != nil {
				t.Fatal(err)
			}
			s.Open()
			got = readEvents(t, ctx, hs.URL, "/api/v1/pods?watch=true&resourceVersion="+strconv.FormatInt(before.LastRV, 10), mt, changes)
			for k := range changes {
				i := int(int64(k) * int64(stride) % pods)
				if want := canonicalEvent(t, mt, watch.Modified, i, res.FirstRV+int64(k), 4); !bytes.Equal(got[k], want) {
					t.Fatalf("change %d (pod %d): %d bytes, want %d canonical bytes", k, i, len(got[k]), len(want))
				}
			}
		})
	}
}

// BenchmarkEncodeEvents measures what serving one change costs: the pod
// generated, encoded and framed, on every core (-cpu 1 for one), in time
// and in this process's CPU time.
func BenchmarkEncodeEvents(b *testing.B) {
	const pods = 1000
	s, err := New(Pods(pods))
	if err != nil {
		b.Fatal(err)
	}
	res := s.res[0]
	for _, mt := range []string{kruntime.ContentTypeProtobuf, kruntime.ContentTypeJSON} {
		b.Run(mt, func(b *testing.B) {
			r := httptest.NewRequest(http.MethodGet, "/api/v1/pods", nil)
			r.Header.Set("Accept", mt)
			c := s.negotiate(r, res)
			at := func(k int) state { return state{idx: int32(k % pods), rv: int64(pods + k), gen: 2} }
			b.ReportAllocs()
			b.ResetTimer()
			cpu0, _ := measure.ProcessCPU()
			if err := encodeOrdered(context.Background(), io.Discard, c, res, watch.Modified, b.N, at); err != nil {
				b.Fatal(err)
			}
			// On a shared machine the CPU time is the steadier cost.
			if cpu1, ok := measure.ProcessCPU(); ok {
				b.ReportMetric(float64(cpu1-cpu0)/float64(b.N), "cpu-ns/event")
			}
		})
	}
}
